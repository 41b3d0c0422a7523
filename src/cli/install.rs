//! `hcomm install --prefix DIR`: lay out a drop-in MPI installation, so that an existing
//! program builds with `DIR/bin/mpicc` and runs with `DIR/bin/mpiexec` unchanged.
//!
//! # Layout
//!
//! ```text
//! DIR/bin/hcomm               copy of the running hcomm executable
//! DIR/bin/mpiexec             sh script: exec DIR/bin/hcomm run "$@"
//! DIR/bin/mpirun              -> mpiexec
//! DIR/bin/mpicc, mpicxx       compiler wrappers (sh scripts, below)
//! DIR/include/mpi.h           the header, embedded in this binary at build time
//! DIR/lib/libhcomm.so         copy of the library (not a link into the build tree)
//! DIR/lib/libmpi.so           -> libhcomm.so (for Makefiles that say -lmpi)
//! DIR/lib/libmpi.so.12,       -> libhcomm.so: MPICH's sonames (libmpi.so.12 upstream,
//!   libmpich.so.12               libmpich.so.12 in Debian), so a program built against
//!                                MPICH runs on hcomm with LD_LIBRARY_PATH=DIR/lib
//! DIR/lib/pkgconfig/mpi.pc    pkg-config: Cflags/Libs of the above (hcomm.pc the same)
//! ```
//!
//! Every generated file names DIR as an absolute path (a relative `--prefix` is made
//! absolute against the current directory, symlinks kept), so the wrappers work from any
//! directory; moving the prefix means installing again.
//!
//! # Where the files come from
//!
//! The header is compiled into the binary (`include_str!`), so the installer needs no
//! source tree. The library is looked up next to the running executable
//! ([`std::env::current_exe`]): in a build tree `cargo build --release` puts `hcomm` and
//! `libhcomm.so` in the same directory; in an installed prefix the library is in `../lib`,
//! so `DIR/bin/hcomm install --prefix OTHER` works too.
//!
//! # Replacing files
//!
//! Each file is written to a temporary name in its destination directory and renamed over
//! the old one. A program (or library) in use keeps its old inode, and installing from a
//! prefix into itself copies each file onto itself safely (a plain copy would truncate the
//! source first).
//!
//! # The compiler wrappers
//!
//! `mpicc` runs `${HCOMM_CC:-cc}`, `mpicxx` runs `${HCOMM_CXX:-c++}` (several words allowed,
//! e.g. `ccache gcc`), as `COMPILER -IDIR/include [-LDIR/lib] ARGS... [-Wl,-rpath,DIR/lib
//! -lhcomm]`. The include directory goes first so that hcomm's `mpi.h` wins over another
//! MPI's a Makefile may name; `-lhcomm` goes last, after the objects that need it (linkers
//! with `--as-needed` drop a library named before them). The link flags are added only when
//! the command links: not with `-c`, `-S`, `-E`, `-M`, `-MM` or `-fsyntax-only`, nor for a
//! lone `-v` / `--version`. MPICH's informational options are understood: `-show` prints
//! the command instead of running it; `-compile_info` / `-link_info` print the compile /
//! link command; `-show-compile-info` / `-show-link-info` print only the flags hcomm adds
//! (Open MPI's `-showme`, `-showme:compile`, `-showme:link` are the same); `-cc=COMPILER`
//! (`-cxx=` for mpicxx) overrides the compiler.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

/// The MPI header, taken from the source tree when this binary is built.
const MPI_H: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/include/mpi.h"));

const LIB_NAME: &str = "libhcomm.so";

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// Directory to install into (created if missing; existing files are replaced)
    #[arg(long, value_name = "DIR")]
    pub prefix: PathBuf,
}

/// Entry point of `hcomm install`: returns the process exit code.
pub fn install(args: InstallArgs) -> i32 {
    match install_into(&args.prefix) {
        Ok(prefix) => {
            let p = prefix.display();
            println!(
                "hcomm install: installed hcomm {} into {p}",
                env!("CARGO_PKG_VERSION")
            );
            println!("  {p}/bin/mpicc, mpicxx, mpiexec, mpirun, hcomm");
            println!("  {p}/include/mpi.h");
            println!("  {p}/lib/{LIB_NAME}, libmpi.so, libmpi.so.12, libmpich.so.12 -> {LIB_NAME}");
            println!("  {p}/lib/pkgconfig/mpi.pc, hcomm.pc");
            println!("Build with {p}/bin/mpicc (or put {p}/bin first in PATH) and run with {p}/bin/mpiexec -n N ./prog");
            0
        }
        Err(e) => {
            eprintln!("hcomm install: {e}");
            1
        }
    }
}

/// Installs everything into `prefix`; returns the absolute prefix written into the files.
fn install_into(prefix: &Path) -> Result<PathBuf, String> {
    let prefix = std::path::absolute(prefix)
        .map_err(|e| format!("cannot make {} absolute: {e}", prefix.display()))?;
    let prefix_str = prefix
        .to_str()
        .filter(|s| !s.contains('\n'))
        .ok_or_else(|| {
            format!(
                "{}: the prefix must be valid UTF-8 without newlines (it is written into scripts and .pc files)",
                prefix.display()
            )
        })?
        .to_string();

    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find the running hcomm executable: {e}"))?;
    let lib = find_library(&exe)?;

    let bin = prefix.join("bin");
    let include = prefix.join("include");
    let libdir = prefix.join("lib");
    let pkgconfig = libdir.join("pkgconfig");
    for dir in [&prefix, &bin, &include, &libdir, &pkgconfig] {
        fs::create_dir_all(dir).map_err(|e| err("cannot create directory", dir, e))?;
    }

    copy_file(&lib, &libdir.join(LIB_NAME), 0o755)?;
    // Programs built against MPICH ask for these sonames; hcomm's header is MPICH's ABI.
    for name in ["libmpi.so", "libmpi.so.12", "libmpich.so.12"] {
        link_file(Path::new(LIB_NAME), &libdir.join(name))?;
    }
    copy_file(&exe, &bin.join("hcomm"), 0o755)?;
    write_file(&include.join("mpi.h"), MPI_H, 0o644)?;
    for (name, pc_name) in [("mpi.pc", "mpi"), ("hcomm.pc", "hcomm")] {
        write_file(
            &pkgconfig.join(name),
            &pkg_config(&prefix_str, pc_name),
            0o644,
        )?;
    }
    write_file(
        &bin.join("mpicc"),
        &compiler_wrapper(&prefix_str, Lang::C),
        0o755,
    )?;
    write_file(
        &bin.join("mpicxx"),
        &compiler_wrapper(&prefix_str, Lang::Cxx),
        0o755,
    )?;
    write_file(&bin.join("mpiexec"), &mpiexec_script(&prefix_str), 0o755)?;
    link_file(Path::new("mpiexec"), &bin.join("mpirun"))?;
    Ok(prefix)
}

/// `libhcomm.so` next to the executable (a build tree) or in `../lib` (an installed prefix).
fn find_library(exe: &Path) -> Result<PathBuf, String> {
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let candidates = [dir.join(LIB_NAME), dir.join("../lib").join(LIB_NAME)];
    if let Some(found) = candidates.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    Err(format!(
        "{} not found (looked for {} and {}): build it first with `cargo build --release`, \
         which puts libhcomm.so next to the hcomm executable, and run that hcomm",
        LIB_NAME,
        candidates[0].display(),
        candidates[1].display()
    ))
}

fn err(what: &str, path: &Path, e: io::Error) -> String {
    format!("{what} {}: {e}", path.display())
}

/// A temporary name in `dest`'s directory, renamed over `dest` once complete.
fn temp_name(dest: &Path) -> PathBuf {
    let name = dest
        .file_name()
        .unwrap_or(OsStr::new("file"))
        .to_string_lossy();
    dest.with_file_name(format!(".{name}.hcomm-install-{}", std::process::id()))
}

/// Moves the finished temporary file `tmp` over `dest` (removing `tmp` on failure).
fn finish(tmp: &Path, dest: &Path, result: io::Result<()>) -> Result<(), String> {
    let result = result.and_then(|()| fs::rename(tmp, dest));
    result.map_err(|e| {
        let _ = fs::remove_file(tmp);
        err("cannot write", dest, e)
    })
}

fn write_file(dest: &Path, contents: &str, mode: u32) -> Result<(), String> {
    let tmp = temp_name(dest);
    let result = fs::write(&tmp, contents)
        .and_then(|()| fs::set_permissions(&tmp, fs::Permissions::from_mode(mode)));
    finish(&tmp, dest, result)
}

fn copy_file(src: &Path, dest: &Path, mode: u32) -> Result<(), String> {
    let tmp = temp_name(dest);
    let result = match fs::copy(src, &tmp) {
        Ok(_) => fs::set_permissions(&tmp, fs::Permissions::from_mode(mode)),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            return Err(format!(
                "cannot copy {} to {}: {e}",
                src.display(),
                dest.display()
            ));
        }
    };
    finish(&tmp, dest, result)
}

/// Makes `dest` a symlink to `target` (relative to `dest`'s directory).
fn link_file(target: &Path, dest: &Path) -> Result<(), String> {
    let tmp = temp_name(dest);
    let _ = fs::remove_file(&tmp);
    let result = symlink(target, &tmp);
    finish(&tmp, dest, result)
}

/// `s` as one word of a POSIX shell command (single-quoted, `'` written as `'\''`).
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Lang {
    C,
    Cxx,
}

/// The `mpicc` / `mpicxx` script for the installation in `prefix` (see the module doc).
fn compiler_wrapper(prefix: &str, lang: Lang) -> String {
    let (name, var, default, cc_opt) = match lang {
        Lang::C => ("mpicc", "HCOMM_CC", "cc", "-cc="),
        Lang::Cxx => ("mpicxx", "HCOMM_CXX", "c++", "-cxx="),
    };
    WRAPPER_TEMPLATE
        .replace("@NAME@", name)
        .replace("@VAR@", var)
        .replace("@DEFAULT@", default)
        .replace("@CC_OPT@", cc_opt)
        .replace("@PREFIX_COMMENT@", prefix)
        .replace("@PREFIX@", &sh_quote(prefix))
}

const WRAPPER_TEMPLATE: &str = r#"#!/bin/sh
# @NAME@ of the hcomm installation in @PREFIX_COMMENT@ (written by `hcomm install`).
# Runs ${@VAR@:-@DEFAULT@} with hcomm's include directory and, when linking, its library:
#   COMPILER -I<prefix>/include [-L<prefix>/lib] ARGS... [-Wl,-rpath,<prefix>/lib -lhcomm]
# Options of the wrapper itself (as MPICH's):
#   -show                print the command instead of running it
#   -compile_info        print the compile command (no link flags); -link_info: the link command
#   -show-compile-info   print only the compile flags; -show-link-info: only the link flags
#   @CC_OPT@COMPILER         use COMPILER instead of $@VAR@
# $compiler is split into words on purpose ("ccache gcc"); set -f keeps it from globbing.
# shellcheck disable=SC2086
set -f
prefix=@PREFIX@
compiler=${@VAR@:-@DEFAULT@}
show=no
info=
linking=yes
for arg do
    shift
    case $arg in
        -show | -showme) show=yes; continue ;;
        -compile_info | -compile-info) show=yes; linking=no; continue ;;
        -link_info | -link-info) show=yes; linking=force; continue ;;
        -show-compile-info | -showme:compile) info='compile'; continue ;;
        -show-link-info | -showme:link) info='link'; continue ;;
        @CC_OPT@*) compiler=${arg#@CC_OPT@}; continue ;;
        -c | -S | -E | -M | -MM | -fsyntax-only) [ $linking = force ] || linking=no ;;
    esac
    set -- "$@" "$arg"
done
if [ $# -eq 1 ]; then
    case $1 in -v | --version | -dumpversion | -dumpfullversion | --help) linking=no ;; esac
fi

# Prints its arguments as one shell command line, quoting those that need it.
print_command() {
    line=
    for word do
        case $word in
            '' | *[!A-Za-z0-9_./=:,+@%^-]*)
                word="'$(printf '%s' "$word" | sed "s/'/'\\\\''/g")'" ;;
        esac
        line="$line${line:+ }$word"
    done
    printf '%s\n' "$line"
}

case $info in
    compile) print_command "-I$prefix/include"; exit 0 ;;
    link) print_command "-L$prefix/lib" "-Wl,-rpath,$prefix/lib" -lhcomm; exit 0 ;;
esac
if [ $linking = no ]; then
    set -- "-I$prefix/include" "$@"
else
    set -- "-I$prefix/include" "-L$prefix/lib" "$@" "-Wl,-rpath,$prefix/lib" -lhcomm
fi
if [ $show = yes ]; then
    # The compiler stays as given (it may be several words, e.g. "ccache gcc").
    printf '%s ' $compiler
    print_command "$@"
    exit 0
fi
exec $compiler "$@"
"#;

/// The `mpiexec` script: `hcomm run` of the installed hcomm.
fn mpiexec_script(prefix: &str) -> String {
    format!(
        "#!/bin/sh\n\
         # mpiexec of the hcomm installation in {prefix} (written by `hcomm install`):\n\
         # `hcomm run`, e.g. mpiexec -n 4 ./prog args (see hcomm run --help).\n\
         exec {} run \"$@\"\n",
        sh_quote(&format!("{prefix}/bin/hcomm"))
    )
}

/// A pkg-config file for the installation in `prefix` (`name` is the package name).
fn pkg_config(prefix: &str, name: &str) -> String {
    // pkg-config splits values at unescaped spaces.
    let prefix = prefix.replace(' ', r"\ ");
    format!(
        "# Written by `hcomm install`.\n\
         prefix={prefix}\n\
         includedir=${{prefix}}/include\n\
         libdir=${{prefix}}/lib\n\
         \n\
         Name: {name}\n\
         Description: hcomm, collective communication over the MPI C ABI (MPICH ABI)\n\
         Version: {version}\n\
         Cflags: -I${{includedir}}\n\
         Libs: -L${{libdir}} -Wl,-rpath,${{libdir}} -lhcomm\n",
        version = env!("CARGO_PKG_VERSION")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sh_quote_survives_quotes() {
        assert_eq!(sh_quote("/a b"), "'/a b'");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn wrappers_name_their_compiler_and_prefix() {
        let c = compiler_wrapper("/opt/h", Lang::C);
        assert!(c.starts_with("#!/bin/sh\n"));
        assert!(c.contains("prefix='/opt/h'\n"));
        assert!(c.contains("compiler=${HCOMM_CC:-cc}\n"));
        let cxx = compiler_wrapper("/opt/h", Lang::Cxx);
        assert!(cxx.contains("compiler=${HCOMM_CXX:-c++}\n"));
        assert!(cxx.contains("-cxx=*) compiler=${arg#-cxx=}"));
        for script in [&c, &cxx] {
            for placeholder in ["@NAME@", "@VAR@", "@DEFAULT@", "@CC_OPT@", "@PREFIX"] {
                assert!(!script.contains(placeholder), "{placeholder} left in");
            }
        }
    }

    #[test]
    fn mpiexec_execs_the_installed_hcomm() {
        assert!(mpiexec_script("/opt/h").ends_with("exec '/opt/h/bin/hcomm' run \"$@\"\n"));
    }

    #[test]
    fn pkg_config_escapes_spaces() {
        let pc = pkg_config("/opt/my h", "mpi");
        assert!(pc.contains("prefix=/opt/my\\ h\n"));
        assert!(pc.contains("Name: mpi\n"));
        assert!(pc.contains("Libs: -L${libdir} -Wl,-rpath,${libdir} -lhcomm\n"));
    }
}
