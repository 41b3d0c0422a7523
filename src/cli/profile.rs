//! `hcomm profile`: merges the per-rank JSON files `HCOMM_PROFILE=path.json` wrote into one
//! table — per collective the calls, the bytes, the time of the fastest, mean and slowest rank,
//! the bus bandwidth of the slowest rank (the one the job waits for) and the algorithms taken.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;

#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// The HCOMM_PROFILE value the job ran with (prof.json finds prof.0.json, prof.1.json,
    /// ...), or the per-rank files themselves.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print the merged table as JSON.
    #[arg(long)]
    pub json: bool,
}

/// One rank's record of one collective.
#[derive(Clone, Debug)]
struct Row {
    calls: u64,
    bytes: u64,
    seconds: f64,
    bus_bytes: f64,
    algos: Vec<(String, u64)>,
}

/// The per-rank files a `HCOMM_PROFILE` value produced (`stem.<rank>.ext`, `stem.<rank>`, or
/// `%r` replaced by the rank).
fn expand(arg: &Path) -> Vec<PathBuf> {
    if arg.is_file() && !arg.to_string_lossy().contains("%r") {
        return vec![arg.to_path_buf()];
    }
    let text = arg.to_string_lossy();
    let (dir, name) = match arg.parent() {
        Some(d) if !d.as_os_str().is_empty() => (d.to_path_buf(), arg.file_name()),
        _ => (PathBuf::from("."), arg.file_name()),
    };
    let name = name
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (prefix, suffix) = if let Some((a, b)) = name.split_once("%r") {
        (a.to_string(), b.to_string())
    } else if let Some((stem, ext)) = name.rsplit_once('.') {
        (format!("{stem}."), format!(".{ext}"))
    } else {
        (format!("{name}."), String::new())
    };
    let mut found: Vec<(u64, PathBuf)> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    let mid = n.strip_prefix(&prefix)?.strip_suffix(&suffix)?;
                    let rank: u64 = mid.parse().ok()?;
                    Some((rank, e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    if found.is_empty() {
        eprintln!(
            "hcomm profile: no per-rank files for {text} (looked for {prefix}<rank>{suffix} in {})",
            dir.display()
        );
    }
    found.into_iter().map(|(_, p)| p).collect()
}

/// Reads one rank's file: (rank, collective -> row).
fn read(path: &Path) -> Result<(i64, BTreeMap<String, Row>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    if v.get("hcomm_profile").and_then(Value::as_u64) != Some(1) {
        return Err(format!("{}: not an HCOMM_PROFILE file", path.display()));
    }
    let rank = v.get("rank").and_then(Value::as_i64).unwrap_or(-1);
    let mut rows = BTreeMap::new();
    for c in v
        .get("collectives")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = c
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        let num = |k: &str| c.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        let algos = c
            .get("algorithms")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|a| {
                (
                    a.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_string(),
                    a.get("calls").and_then(Value::as_u64).unwrap_or(0),
                )
            })
            .collect();
        rows.insert(
            name,
            Row {
                calls: num("calls") as u64,
                bytes: num("bytes") as u64,
                seconds: num("seconds"),
                bus_bytes: num("bus_bytes"),
                algos,
            },
        );
    }
    Ok((rank, rows))
}

pub fn profile(args: ProfileArgs) -> i32 {
    let files: Vec<PathBuf> = args.files.iter().flat_map(|f| expand(f)).collect();
    if files.is_empty() {
        return 1;
    }
    let mut ranks = Vec::new();
    for f in &files {
        match read(f) {
            Ok(r) => ranks.push(r),
            Err(e) => {
                eprintln!("hcomm profile: {e}");
                return 1;
            }
        }
    }
    ranks.sort_by_key(|r| r.0);
    // Collectives in the order of the first rank that has each.
    let mut names: Vec<String> = Vec::new();
    for (_, rows) in &ranks {
        for n in rows.keys() {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    let mut merged = Vec::new();
    for name in &names {
        let rows: Vec<&Row> = ranks.iter().filter_map(|(_, r)| r.get(name)).collect();
        let calls: Vec<u64> = rows.iter().map(|r| r.calls).collect();
        let secs: Vec<f64> = rows.iter().map(|r| r.seconds).collect();
        let min = secs.iter().copied().fold(f64::INFINITY, f64::min);
        let max = secs.iter().copied().fold(0.0, f64::max);
        let mean = secs.iter().sum::<f64>() / secs.len() as f64;
        // The slowest rank bounds the job: its bus bytes over its time.
        let slow = rows
            .iter()
            .max_by(|a, b| a.seconds.total_cmp(&b.seconds))
            .expect("one row");
        let busbw = if slow.seconds > 0.0 {
            slow.bus_bytes / slow.seconds / 1e9
        } else {
            0.0
        };
        let mut algos: Vec<(String, u64)> = Vec::new();
        for r in &rows {
            for (a, n) in &r.algos {
                match algos.iter_mut().find(|x| &x.0 == a) {
                    Some(x) => x.1 += n,
                    None => algos.push((a.clone(), *n)),
                }
            }
        }
        merged.push((
            name.clone(),
            rows.len(),
            *calls.iter().min().unwrap_or(&0),
            *calls.iter().max().unwrap_or(&0),
            rows[0].bytes,
            (min, mean, max),
            busbw,
            algos,
        ));
    }
    if args.json {
        let out: Vec<Value> = merged
            .iter()
            .map(|(name, nr, cmin, cmax, bytes, (min, mean, max), busbw, algos)| {
                serde_json::json!({
                    "name": name, "ranks": nr, "calls_min": cmin, "calls_max": cmax,
                    "bytes_rank0": bytes, "seconds_min": min, "seconds_mean": mean,
                    "seconds_max": max, "busbw_gbps": busbw,
                    "algorithms": algos.iter().map(|(a, n)| serde_json::json!({"name": a, "calls": n})).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return 0;
    }
    println!(
        "hcomm profile: {} rank(s) from {} file(s)",
        ranks.len(),
        files.len()
    );
    println!(
        "{:<21} {:>11} {:>14} {:>10} {:>10} {:>10} {:>10}  algorithms (calls, all ranks)",
        "collective", "calls/rank", "bytes/rank", "min(s)", "mean(s)", "max(s)", "busbw"
    );
    for (name, _, cmin, cmax, bytes, (min, mean, max), busbw, algos) in &merged {
        let calls = if cmin == cmax {
            cmin.to_string()
        } else {
            format!("{cmin}-{cmax}")
        };
        let algos: Vec<String> = algos.iter().map(|(a, n)| format!("{a}:{n}")).collect();
        println!(
            "{name:<21} {calls:>11} {bytes:>14} {min:>10.4} {mean:>10.4} {max:>10.4} {busbw:>10.2}  {}",
            algos.join(",")
        );
    }
    println!("(time: per rank, in the collective; busbw in GB/s of the slowest rank, nccl-tests factors)");
    if merged.iter().any(|m| m.0.starts_with('i')) {
        println!("(i* rows: nonblocking calls, timed from the starting call to the wait or test that completed them)");
    }
    0
}
