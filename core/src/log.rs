//! Logging: `HCOMM_DEBUG=WARN|INFO|TRACE`, every line prefixed `host:pid [rank]`.
//!
//! A disabled log line costs one relaxed atomic load: the level check happens before any
//! formatting, inside the macros.

use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};
use std::sync::OnceLock;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Level {
    Off = 0,
    Warn = 1,
    Info = 2,
    Trace = 3,
}

/// 255 = not yet read from the environment.
static LEVEL: AtomicU8 = AtomicU8::new(255);
static RANK: AtomicI32 = AtomicI32::new(-1);
static PREFIX: OnceLock<String> = OnceLock::new();

fn parse_level(s: &str) -> Level {
    match s.trim().to_ascii_uppercase().as_str() {
        "" | "OFF" | "NONE" => Level::Off,
        "WARN" | "WARNING" => Level::Warn,
        "INFO" => Level::Info,
        "TRACE" | "DEBUG" | "ALL" => Level::Trace,
        _ => Level::Warn,
    }
}

/// The current level; reads `HCOMM_DEBUG` on first use. WARN is on by default: warnings
/// are things a user must see (a late peer, a fallback).
#[inline]
pub fn level() -> Level {
    match LEVEL.load(Ordering::Relaxed) {
        0 => Level::Off,
        1 => Level::Warn,
        2 => Level::Info,
        3 => Level::Trace,
        _ => init_level(),
    }
}

#[cold]
fn init_level() -> Level {
    let l = match crate::param::debug() {
        Some(s) => parse_level(&s),
        None => Level::Warn,
    };
    LEVEL.store(l as u8, Ordering::Relaxed);
    l
}

#[inline]
pub fn enabled(l: Level) -> bool {
    l <= level()
}

/// Records this process's world rank for the log prefix.
pub fn set_rank(rank: usize) {
    RANK.store(rank as i32, Ordering::Relaxed);
}

/// This process's world rank once the launcher told it (before `MPI_Init` completes too).
pub fn rank() -> Option<usize> {
    usize::try_from(RANK.load(Ordering::Relaxed)).ok()
}

pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its full length; gethostname NUL-terminates on success
    // (and we bound the read by the buffer length anyway).
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

fn prefix() -> &'static str {
    PREFIX.get_or_init(|| format!("{}:{}", hostname(), std::process::id()))
}

#[doc(hidden)]
pub fn emit(l: Level, args: std::fmt::Arguments<'_>) {
    let tag = match l {
        Level::Warn => "WARN",
        Level::Info => "INFO",
        _ => "TRACE",
    };
    let rank = RANK.load(Ordering::Relaxed);
    let line = if rank >= 0 {
        format!("{} [{}] hcomm {}: {}\n", prefix(), rank, tag, args)
    } else {
        format!("{} [-] hcomm {}: {}\n", prefix(), tag, args)
    };
    use std::io::Write;
    // One write call per line so lines from several ranks do not interleave mid-line.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

#[macro_export]
macro_rules! warn {
    ($($arg:tt)*) => {
        if $crate::log::enabled($crate::log::Level::Warn) {
            $crate::log::emit($crate::log::Level::Warn, format_args!($($arg)*));
        }
    };
}

#[macro_export]
macro_rules! info {
    ($($arg:tt)*) => {
        if $crate::log::enabled($crate::log::Level::Info) {
            $crate::log::emit($crate::log::Level::Info, format_args!($($arg)*));
        }
    };
}

#[macro_export]
macro_rules! trace {
    ($($arg:tt)*) => {
        if $crate::log::enabled($crate::log::Level::Trace) {
            $crate::log::emit($crate::log::Level::Trace, format_args!($($arg)*));
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse() {
        assert_eq!(parse_level("warn"), Level::Warn);
        assert_eq!(parse_level("INFO"), Level::Info);
        assert_eq!(parse_level("TRACE"), Level::Trace);
        assert_eq!(parse_level(""), Level::Off);
        assert!(Level::Warn < Level::Info);
    }
}
