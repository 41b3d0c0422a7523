//! Host lists for `hcomm run` across hosts: `--hosts h1:4,h2`, `--hostfile FILE`
//! (`host slots=N`), Slurm's compressed node lists (`node[1-3,5]`), and the placement of
//! ranks on hosts (filling each host's slots in order, like `mpirun --map-by slot`).

/// One host and how many ranks it takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    pub slots: usize,
}

/// The ranks one host runs: `count` consecutive ranks from `first`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub host: usize,
    pub first: usize,
    pub count: usize,
}

fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._:[]%@".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!("'{name}' is not a host name"))
    }
}

fn parse_slots(s: &str, host: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "host '{host}': '{s}' is not a number of slots (>= 1)"
        )),
    }
}

/// `h1:4,h2:4,h3` (a host without `:N` has one slot).
pub fn parse_host_list(s: &str) -> Result<Vec<Host>, String> {
    let mut hosts = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (name, slots) = match item.rsplit_once(':') {
            // An IPv6 address has colons of its own: only a last `:digits` is a slot count.
            Some((name, n))
                if !name.contains(':')
                    || (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) =>
            {
                (name, parse_slots(n, name)?)
            }
            _ => (item, 1),
        };
        check_name(name)?;
        hosts.push(Host {
            name: name.to_string(),
            slots,
        });
    }
    if hosts.is_empty() {
        return Err(format!("'{s}' names no host"));
    }
    Ok(hosts)
}

/// A hostfile: one `host [slots=N]` per line (Open MPI's `max_slots=` is ignored), `#`
/// starting a comment.
pub fn parse_hostfile(text: &str) -> Result<Vec<Host>, String> {
    let mut hosts = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        let mut words = line.split_whitespace();
        let Some(name) = words.next() else { continue };
        check_name(name).map_err(|e| format!("line {}: {e}", i + 1))?;
        let mut slots = 1;
        for w in words {
            if let Some(n) = w.strip_prefix("slots=") {
                slots = parse_slots(n, name).map_err(|e| format!("line {}: {e}", i + 1))?;
            } else if !w.starts_with("max_slots=") {
                return Err(format!("line {}: unknown word '{w}'", i + 1));
            }
        }
        hosts.push(Host {
            name: name.to_string(),
            slots,
        });
    }
    if hosts.is_empty() {
        return Err("the hostfile names no host".into());
    }
    Ok(hosts)
}

/// Expands a Slurm node list: `node[1-3,5],gpu07,r[1-2]n[01-02]` (zero padding kept).
pub fn expand_nodelist(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                expand_one(&s[start..i], &mut out)?;
                start = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(format!("'{s}': unbalanced brackets"));
        }
    }
    if depth != 0 {
        return Err(format!("'{s}': unbalanced brackets"));
    }
    expand_one(&s[start..], &mut out)?;
    Ok(out)
}

fn expand_one(item: &str, out: &mut Vec<String>) -> Result<(), String> {
    let item = item.trim();
    if item.is_empty() {
        return Ok(());
    }
    let Some(open) = item.find('[') else {
        out.push(item.to_string());
        return Ok(());
    };
    let close = open
        + item[open..]
            .find(']')
            .ok_or_else(|| format!("'{item}': unbalanced brackets"))?;
    let (prefix, ranges, rest) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
    let mut tails = Vec::new();
    expand_one(rest, &mut tails)?;
    if tails.is_empty() {
        tails.push(String::new());
    }
    for range in ranges.split(',') {
        let (lo, hi) = range.split_once('-').unwrap_or((range, range));
        let width = lo.len();
        let bad = || format!("'{item}': bad range '{range}'");
        let lo_n: u64 = lo.parse().map_err(|_| bad())?;
        let hi_n: u64 = hi.parse().map_err(|_| bad())?;
        if hi_n < lo_n || hi_n - lo_n > 100_000 {
            return Err(bad());
        }
        for n in lo_n..=hi_n {
            for t in &tails {
                out.push(format!("{prefix}{n:0width$}{t}"));
            }
        }
    }
    Ok(())
}

/// Places `n` ranks by filling the hosts' slots in order. More ranks than slots is an error
/// (as with `mpirun` without `--oversubscribe`). Hosts left without a rank are dropped.
pub fn place(hosts: &[Host], n: usize) -> Result<Vec<Placement>, String> {
    let total: usize = hosts.iter().map(|h| h.slots).sum();
    if n > total {
        return Err(format!(
            "{n} ranks requested but the hosts have {total} slot{} in all",
            if total == 1 { "" } else { "s" }
        ));
    }
    let mut out = Vec::new();
    let mut next = 0;
    for (i, h) in hosts.iter().enumerate() {
        if next == n {
            break;
        }
        let count = h.slots.min(n - next);
        out.push(Placement {
            host: i,
            first: next,
            count,
        });
        next += count;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(name: &str, slots: usize) -> Host {
        Host {
            name: name.into(),
            slots,
        }
    }

    #[test]
    fn host_lists() {
        assert_eq!(
            parse_host_list("a:4,b:2,c").unwrap(),
            [h("a", 4), h("b", 2), h("c", 1)]
        );
        assert_eq!(parse_host_list(" 10.0.0.1:2 ").unwrap(), [h("10.0.0.1", 2)]);
        assert!(parse_host_list("a:0").is_err());
        assert!(parse_host_list("a:x").is_err());
        assert!(parse_host_list(",").is_err());
        assert!(parse_host_list("-oProxyCommand=x").is_err());
        assert!(parse_host_list("a b").is_err());
    }

    #[test]
    fn hostfiles() {
        let text = "# cluster\nnode1 slots=4\n\nnode2   # one slot\nnode3 slots=2 max_slots=8\n";
        assert_eq!(
            parse_hostfile(text).unwrap(),
            [h("node1", 4), h("node2", 1), h("node3", 2)]
        );
        assert!(parse_hostfile("# nothing\n").is_err());
        assert!(parse_hostfile("a slots=0").is_err());
        assert!(parse_hostfile("a cpus=3").is_err());
    }

    #[test]
    fn slurm_nodelists() {
        assert_eq!(
            expand_nodelist("node[1-3,5]").unwrap(),
            ["node1", "node2", "node3", "node5"]
        );
        assert_eq!(
            expand_nodelist("gpu[08-10],login").unwrap(),
            ["gpu08", "gpu09", "gpu10", "login"]
        );
        assert_eq!(
            expand_nodelist("r[1-2]n[1,3]").unwrap(),
            ["r1n1", "r1n3", "r2n1", "r2n3"]
        );
        assert_eq!(expand_nodelist("solo").unwrap(), ["solo"]);
        assert!(expand_nodelist("node[3-1]").is_err());
        assert!(expand_nodelist("node[1-2").is_err());
        assert!(expand_nodelist("node[a]").is_err());
    }

    #[test]
    fn placement_fills_hosts_in_order() {
        let hosts = [h("a", 2), h("b", 2), h("c", 4)];
        let p = |host, first, count| Placement { host, first, count };
        assert_eq!(place(&hosts, 3).unwrap(), [p(0, 0, 2), p(1, 2, 1)]);
        assert_eq!(
            place(&hosts, 8).unwrap(),
            [p(0, 0, 2), p(1, 2, 2), p(2, 4, 4)]
        );
        assert!(place(&hosts, 9).is_err());
    }
}
