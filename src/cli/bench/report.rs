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
}

/// The column header of the text table (the line after the `#` description lines).
pub const HEADER: &str = "#      collective        size       count      type    op  root  inplace   iters    time(us)  algbw(GB/s)  busbw(GB/s)  #wrong";

impl Row {
    /// The row as a line of the text table, aligned under [`HEADER`].
    pub fn text(&self) -> String {
        let wrong = self.wrong.map_or("N/A".to_string(), |w| w.to_string());
        format!(
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
        )
    }

    fn json(&self) -> String {
        let wrong = self.wrong.map_or("null".to_string(), |w| w.to_string());
        format!(
            "{{\"collective\":{},\"size\":{},\"count\":{},\"datatype\":{},\"op\":{},\"root\":{},\"inplace\":{},\"warmup\":{},\"iters\":{},\"time_us\":{},\"algbw_gbs\":{},\"busbw_gbs\":{},\"wrong\":{}}}",
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
            wrong
        )
    }
}

/// What the JSON document says about the run besides its rows.
pub struct RunInfo<'a> {
    pub version: &'a str,
    pub library: &'a str,
    pub host: &'a str,
    pub ranks: usize,
    pub check: bool,
}

/// The `--json` document: the run's description and one object per row.
pub fn json(info: &RunInfo, rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "{{\"tool\":\"hcomm bench\",\"version\":{},\"library\":{},\"host\":{},\"ranks\":{},\"check\":{},\"busbw_factor\":{{\"allreduce\":\"2(n-1)/n\",\"reduce_scatter\":\"(n-1)/n\",\"allgather\":\"(n-1)/n\",\"bcast\":\"1\",\"reduce\":\"1\"}},\"results\":[",
        quote(info.version),
        quote(info.library),
        quote(info.host),
        info.ranks,
        info.check
    );
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str("\n  ");
        s.push_str(&r.json());
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
        }
    }

    #[test]
    fn text_has_the_header_columns() {
        let cols: Vec<String> = row().text().split_whitespace().map(String::from).collect();
        let head = HEADER.trim_start_matches('#').split_whitespace().count();
        assert_eq!(cols.len(), head);
        assert_eq!(cols[0], "allreduce");
        assert_eq!(cols[11], "0");
        let mut r = row();
        r.wrong = None;
        assert!(r.text().ends_with("N/A"));
    }

    #[test]
    fn json_is_well_formed_enough() {
        let info = RunInfo {
            version: "0.1.0",
            library: "say \"hi\"\n",
            host: "h",
            ranks: 2,
            check: true,
        };
        let j = json(&info, &[row(), row()]);
        assert!(j.contains("\"library\":\"say \\\"hi\\\"\\u000a\""));
        assert!(j.contains("\"time_us\":1.5,"));
        assert_eq!(j.matches("\"collective\"").count(), 2);
        assert_eq!(num(f64::NAN), "null");
    }
}
