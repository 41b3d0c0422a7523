//! Output of `hcomm bench`: the nccl-tests-style text table and the `--json` document.
//!
//! The text format is shared with `benches/coll_bench.c` so that `scripts/perf-compare.sh`
//! reads both the same way: lines starting with `#` describe the run, every other line is one
//! result with whitespace-separated columns
//!
//! ```text
//! collective size count type op root inplace iters time(us) algbw(GB/s) busbw(GB/s) #wrong
//! ```
//!
//! (`root` is -1 for collectives without one, `#wrong` is `N/A` when checking is off).
//!
//! With `--memory device` each row has one more column, `staged(us)`: the time per call of
//! the host-staged allreduce on allreduce rows, `-` on the others; the JSON rows have
//! `staged_time_us` (null where the table has `-`) and the document a `device` object (the
//! GPUs, the device-to-device copy rate).

use std::fmt::Write as _;

/// One measured size of one collective.
#[derive(Debug, Clone)]
pub struct Row {
    pub coll: &'static str,
    /// Bytes: the whole n-rank buffer for allgather and reduce_scatter (nccl-tests' S).
    pub size: usize,
    /// Elements of `size`.
    pub count: usize,
    pub dtype: &'static str,
    /// `-` for collectives without an op.
    pub op: &'static str,
    /// -1 for collectives without a root.
    pub root: i32,
    pub inplace: bool,
    pub warmup: u64,
    pub iters: u64,
    pub time_us: f64,
    pub algbw: f64,
    pub busbw: f64,
    /// Wrong elements over all ranks; `None` when checking is off.
    pub wrong: Option<u64>,
    /// Host-staged allreduce, µs per call (`--memory device`, allreduce rows).
    pub staged_us: Option<f64>,
}

/// The column header of the text table (the line after the `#` description lines).
pub const HEADER: &str = "#      collective        size       count      type    op  root  inplace   iters    time(us)  algbw(GB/s)  busbw(GB/s)  #wrong";

/// What `--memory device` appends to [`HEADER`].
pub const STAGED_HEADER: &str = "  staged(us)";

impl Row {
    /// The row as a line of the text table, aligned under [`HEADER`] (and
    /// [`STAGED_HEADER`] when `staged`: device memory).
    pub fn text(&self, staged: bool) -> String {
        let wrong = self.wrong.map_or("N/A".to_string(), |w| w.to_string());
        let mut line = format!(
            "{:>17} {:>11} {:>11} {:>9} {:>5} {:>5} {:>8} {:>7} {:>11.2} {:>12.3} {:>12.3} {:>7}",
            self.coll,
            self.size,
            self.count,
            self.dtype,
            self.op,
            self.root,
            self.inplace as u8,
            self.iters,
            self.time_us,
            self.algbw,
            self.busbw,
            wrong
        );
        if staged {
            let t = self
                .staged_us
                .map_or("-".to_string(), |t| format!("{t:.2}"));
            let _ = write!(line, " {t:>11}");
        }
        line
    }

    fn json(&self, staged: bool) -> String {
        let wrong = self.wrong.map_or("null".to_string(), |w| w.to_string());
        let staged = if staged {
            format!(
                ",\"staged_time_us\":{}",
                self.staged_us.map_or("null".to_string(), num)
            )
        } else {
            String::new()
        };
        format!(
            "{{\"collective\":{},\"size\":{},\"count\":{},\"datatype\":{},\"op\":{},\"root\":{},\"inplace\":{},\"warmup\":{},\"iters\":{},\"time_us\":{},\"algbw_gbs\":{},\"busbw_gbs\":{},\"wrong\":{}{}}}",
            quote(self.coll),
            self.size,
            self.count,
            quote(self.dtype),
            quote(self.op),
            self.root,
            self.inplace,
            self.warmup,
            self.iters,
            num(self.time_us),
            num(self.algbw),
            num(self.busbw),
            wrong,
            staged
        )
    }
}

/// The GPUs of a `--memory device` run.
pub struct DeviceInfo<'a> {
    /// Each rank's GPU ordinal, by rank.
    pub gpus: &'a [i32],
    /// How the ordinals were chosen.
    pub rule: &'a str,
    /// Rank 0's GPU's name.
    pub name: &'a str,
    /// Rank 0's GPU: (bytes read + bytes written) / time of `d2d_copies` copies of
    /// `d2d_bytes`, GB/s.
    pub d2d_gbs: f64,
    pub d2d_bytes: usize,
    pub d2d_copies: u64,
}

/// What the JSON document says about the run besides its rows.
pub struct RunInfo<'a> {
    pub version: &'a str,
    pub library: &'a str,
    pub host: &'a str,
    pub ranks: usize,
    pub check: bool,
    /// `Some` with `--memory device`.
    pub device: Option<DeviceInfo<'a>>,
}

/// The `--json` document: the run's description and one object per row.
pub fn json(info: &RunInfo, rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "{{\"tool\":\"hcomm bench\",\"version\":{},\"library\":{},\"host\":{},\"ranks\":{},\"check\":{},\"memory\":{},\"busbw_factor\":{{\"allreduce\":\"2(n-1)/n\",\"reduce_scatter\":\"(n-1)/n\",\"allgather\":\"(n-1)/n\",\"bcast\":\"1\",\"reduce\":\"1\"}},",
        quote(info.version),
        quote(info.library),
        quote(info.host),
        info.ranks,
        info.check,
        quote(if info.device.is_some() {
            "device"
        } else {
            "host"
        })
    );
    if let Some(d) = &info.device {
        let gpus: Vec<String> = d.gpus.iter().map(|g| g.to_string()).collect();
        let _ = write!(
            s,
            "\"device\":{{\"gpus\":[{}],\"rule\":{},\"name\":{},\"d2d_copy_gbs\":{},\"d2d_copy_bytes\":{},\"d2d_copies\":{}}},",
            gpus.join(","),
            quote(d.rule),
            quote(d.name),
            num(d.d2d_gbs),
            d.d2d_bytes,
            d.d2d_copies
        );
    }
    s.push_str("\"results\":[");
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str("\n  ");
        s.push_str(&r.json(info.device.is_some()));
    }
    s.push_str("\n]}");
    s
}

/// A JSON number (JSON has no NaN or infinity: those become null).
fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        "null".into()
    }
}

/// A JSON string literal.
fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(q, "\\u{:04x}", c as u32);
            }
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> Row {
        Row {
            coll: "allreduce",
            size: 1024,
            count: 256,
            dtype: "float",
            op: "sum",
            root: -1,
            inplace: false,
            warmup: 2,
            iters: 10,
            time_us: 1.5,
            algbw: 0.6826,
            busbw: 0.6826,
            wrong: Some(0),
            staged_us: None,
        }
    }

    fn columns(line: &str) -> Vec<String> {
        line.trim_start_matches('#')
            .split_whitespace()
            .map(String::from)
            .collect()
    }

    #[test]
    fn text_has_the_header_columns() {
        let cols = columns(&row().text(false));
        assert_eq!(cols.len(), columns(HEADER).len());
        assert_eq!(cols[0], "allreduce");
        assert_eq!(cols[11], "0");
        let mut r = row();
        r.wrong = None;
        assert!(r.text(false).ends_with("N/A"));
    }

    #[test]
    fn device_rows_have_the_staged_column() {
        let head = columns(&format!("{HEADER}{STAGED_HEADER}"));
        assert_eq!(head.last().map(String::as_str), Some("staged(us)"));
        let mut r = row();
        let cols = columns(&r.text(true));
        assert_eq!(cols.len(), head.len());
        assert_eq!(cols[12], "-");
        r.staged_us = Some(123.456);
        let cols = columns(&r.text(true));
        assert_eq!(cols[11], "0", "the columns before it stay in place");
        assert_eq!(cols[12], "123.46");
        // The line stays aligned under the header.
        assert_eq!(r.text(true).len(), format!("{HEADER}{STAGED_HEADER}").len());
    }

    #[test]
    fn json_is_well_formed_enough() {
        let info = RunInfo {
            version: "0.1.0",
            library: "say \"hi\"\n",
            host: "h",
            ranks: 2,
            check: true,
            device: None,
        };
        let j = json(&info, &[row(), row()]);
        assert!(j.contains("\"library\":\"say \\\"hi\\\"\\u000a\""));
        assert!(j.contains("\"time_us\":1.5,"));
        assert!(j.contains("\"memory\":\"host\","));
        assert!(!j.contains("staged"), "{j}");
        assert_eq!(j.matches("\"collective\"").count(), 2);
        assert_eq!(num(f64::NAN), "null");
    }

    #[test]
    fn device_json_has_the_gpus_and_the_staged_times() {
        let info = RunInfo {
            version: "0.1.0",
            library: "hcomm",
            host: "h",
            ranks: 2,
            check: true,
            device: Some(DeviceInfo {
                gpus: &[0, 1],
                rule: "local rank mod 2 GPU(s)",
                name: "GPU \"X\"",
                d2d_gbs: 2500.5,
                d2d_bytes: 1 << 20,
                d2d_copies: 256,
            }),
        };
        let mut staged = row();
        staged.staged_us = Some(42.0);
        let mut other = row();
        other.coll = "bcast";
        let j = json(&info, &[staged, other]);
        assert!(j.contains("\"memory\":\"device\","), "{j}");
        assert!(
            j.contains("\"device\":{\"gpus\":[0,1],\"rule\":\"local rank mod 2 GPU(s)\",\"name\":\"GPU \\\"X\\\"\",\"d2d_copy_gbs\":2500.5,\"d2d_copy_bytes\":1048576,\"d2d_copies\":256},\"results\":["),
            "{j}"
        );
        assert!(j.contains("\"wrong\":0,\"staged_time_us\":42}"), "{j}");
        assert!(j.contains("\"wrong\":0,\"staged_time_us\":null}"), "{j}");
    }
}
