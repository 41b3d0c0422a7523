#!/usr/bin/env python3
"""benches/perf_report.py - turns the raw output of scripts/perf-compare.sh into the results
part of docs/PERFORMANCE.md: tables (median with min-max over the repetitions, and the ratio
hcomm / best of MPICH and Open MPI) and SVG plots (busbw vs size, log-x, one line per
implementation). Standard library only.

Input: RAW/np<N>/rep<R>.<impl>.txt, each the output of benches/coll_bench.c (or hcomm bench):
'#' lines, then rows "collective size count type op root inplace iters time(us) algbw busbw
#wrong"; and META-np<N>.txt files, lines "key=value" written by scripts/perf-compare.sh for the
run that measured N ranks (machine, versions, load, settings, commands as cmd.<i>).

Output: SVGDIR/np<N>-<collective>.svg (busbw vs size) and SVGDIR/np<N>-allreduce-time.svg
(time vs size, log-log), and the text between the markers
    <!-- perf-results:begin --> ... <!-- perf-results:end -->
of DOC replaced (everything else in DOC is left alone). Idempotent: the same input gives the
same files.

Usage: perf_report.py --raw DIR --meta DIR/meta-np*.txt --doc docs/PERFORMANCE.md --svgdir docs/perf
"""

import argparse
import collections
import glob
import math
import os
import re
import statistics
import sys

BEGIN = "<!-- perf-results:begin -->"
END = "<!-- perf-results:end -->"

# Display names and colours, in table order.
IMPLS = collections.OrderedDict(
    [
        ("hcomm", ("hcomm (standalone)", "#d62728")),
        ("hcomm-mpich", ("hcomm preloaded in MPICH", "#ff7f0e")),
        ("hcomm-openmpi", ("hcomm preloaded in Open MPI", "#e377c2")),
        ("mpich", ("MPICH", "#1f77b4")),
        ("openmpi", ("Open MPI", "#2ca02c")),
        ("openmpi-noavx", ("Open MPI --mca op ^avx", "#17becf")),
        ("hcomm-bench", ("hcomm bench (Rust tool)", "#8c564b")),
        ("hcomm-cma", ("hcomm, HCOMM_CMA=1 (single copy)", "#9467bd")),
        ("hcomm-nocma", ("hcomm, HCOMM_CMA=0", "#bcbd22")),
        ("hcomm-copies", ("hcomm, HCOMM_CMA=copies", "#7f7f7f")),
        ("hcomm-nostage", ("hcomm, HCOMM_SHM_STAGE=0 (no fan-out)", "#aec7e8")),
    ]
)
PEERS = ("mpich", "openmpi")
COLL_ORDER = ["allreduce", "reduce_scatter", "allgather", "allgatherv", "bcast", "reduce"]


def human(size):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return "%d %s" % (size >> shift, unit)
    return "%d B" % size


def short(size):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return "%d%s" % (size >> shift, unit)
    return "%d" % size


def load(raw):
    """{(np, impl, coll, size): [(time_us, busbw), ...]}, wrong counts, runs per (np, impl)."""
    data = collections.defaultdict(list)
    wrong = collections.Counter()
    runs = collections.Counter()
    for path in sorted(glob.glob(os.path.join(raw, "np*", "rep*.*.txt"))):
        np_ = int(re.search(r"np(\d+)", path).group(1))
        impl = re.match(r"rep\d+\.(.+)\.txt$", os.path.basename(path)).group(1)
        rows = 0
        with open(path) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                c = line.split()
                if len(c) != 12 or not c[1].isdigit():
                    continue
                coll, size, time_us, busbw, w = c[0], int(c[1]), float(c[8]), float(c[10]), c[11]
                data[(np_, impl, coll, size)].append((time_us, busbw))
                if w not in ("0", "N/A"):
                    wrong[(np_, impl, coll)] += int(w)
                rows += 1
        if rows:
            runs[(np_, impl)] += 1
    return data, wrong, runs


def stats(vals):
    return statistics.median(vals), min(vals), max(vals)


def fmt_bw(v):
    return "%.3g" % v if v < 10 else "%.1f" % v


def fmt_t(v):
    return "%.3g" % v if v < 1000 else "%.0f" % v


def cell(vals, fmt):
    if not vals:
        return "–"
    m, lo, hi = stats(vals)
    return "%s (%s–%s)" % (fmt(m), fmt(lo), fmt(hi))


def nearest_size(data, np_, coll, want):
    """The measured size of `coll` at `np_` ranks that stands for `want` bytes: `want` itself,
    else the largest size within 0.1 % below it (the benchmark rounds a size down to whole
    elements per rank: 1 MiB of floats at 3 ranks is 1048572 bytes); None when neither ran."""
    sizes = {k[3] for k in data if k[0] == np_ and k[2] == coll}
    if want in sizes:
        return want
    near = [s for s in sizes if want * 0.999 <= s <= want]
    return max(near) if near else None


def ratio_bw(data, np_, coll, size, impl="hcomm"):
    """median busbw of impl / the larger median busbw of MPICH and Open MPI."""
    mine = data.get((np_, impl, coll, size))
    peers = [data.get((np_, p, coll, size)) for p in PEERS]
    peers = [statistics.median([b for _, b in v]) for v in peers if v]
    if not mine or not peers or max(peers) <= 0:
        return None
    return statistics.median([b for _, b in mine]) / max(peers)


def ratio_time(data, np_, coll, size, impl="hcomm"):
    """median time of impl / the smaller median time of MPICH and Open MPI (lower is better)."""
    mine = data.get((np_, impl, coll, size))
    peers = [data.get((np_, p, coll, size)) for p in PEERS]
    peers = [statistics.median([t for t, _ in v]) for v in peers if v]
    if not mine or not peers or min(peers) <= 0:
        return None
    return statistics.median([t for t, _ in mine]) / min(peers)


def fmt_ratio(r):
    return "–" if r is None else "%.2f×" % r


# ------------------------------------------------------------------------------------------
# SVG


def nice_step(span, ticks=5):
    raw = span / ticks
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg_plot(title, series, ylabel, logy=False):
    """series: [(label, colour, [(size, median, lo, hi), ...])]; x is log2(size)."""
    w, h = 760, 440
    ml, mr, mt, mb = 70, 20, 40, 60
    pw, ph = w - ml - mr, h - mt - mb
    pts = [p for _, _, s in series for p in s]
    if not pts:
        return None
    xs = [math.log2(p[0]) for p in pts]
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x1 = x0 + 1
    if logy:
        ys = [v for p in pts for v in p[1:] if v > 0]
        y0 = math.floor(math.log10(min(ys)))
        y1 = math.ceil(math.log10(max(ys)))
        if y1 == y0:
            y1 = y0 + 1
        ymap = lambda v: mt + ph - (math.log10(max(v, 10 ** y0)) - y0) / (y1 - y0) * ph
        yticks = [(10 ** e, mt + ph - (e - y0) / (y1 - y0) * ph) for e in range(y0, y1 + 1)]
    else:
        ymax = max(p[3] for p in pts) * 1.05 or 1
        step = nice_step(ymax)
        top = step * math.ceil(ymax / step)
        ymap = lambda v: mt + ph - v / top * ph
        yticks = [(i * step, ymap(i * step)) for i in range(int(round(top / step)) + 1)]
    xmap = lambda s: ml + (math.log2(s) - x0) / (x1 - x0) * pw
    out = [
        '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
        'font-family="sans-serif" font-size="12">' % (w, h, w, h),
        '<rect width="100%" height="100%" fill="white"/>',
        '<text x="%d" y="22" font-size="15" text-anchor="middle">%s</text>' % (w / 2, esc(title)),
    ]
    for v, y in yticks:
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (ml, y, ml + pw, y))
        label = ("%g" % v) if not logy else ("%g" % v)
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (ml - 6, y + 4, label))
    e = math.ceil(x0)
    while e <= x1:
        x = xmap(2 ** e)
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>' % (x, mt, x, mt + ph))
        if (e - math.ceil(x0)) % 2 == 0:
            out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x, mt + ph + 16, short(2 ** e)))
        e += 1
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>' % (ml, mt, pw, ph))
    out.append('<text x="%d" y="%d" text-anchor="middle">message size (bytes, log scale)</text>' % (ml + pw / 2, h - 18))
    out.append(
        '<text x="16" y="%d" text-anchor="middle" transform="rotate(-90 16 %d)">%s</text>'
        % (mt + ph / 2, mt + ph / 2, esc(ylabel))
    )
    for i, (label, colour, s) in enumerate(series):
        s = sorted(s)
        line = " ".join("%.1f,%.1f" % (xmap(p[0]), ymap(p[1])) for p in s)
        out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (colour, line))
        for size, med, lo, hi in s:
            x = xmap(size)
            out.append(
                '<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1"/>'
                % (x, ymap(lo), x, ymap(hi), colour)
            )
            out.append('<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>' % (x, ymap(med), colour))
        ly = mt + 14 + 16 * i
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>' % (ml + 10, ly - 4, ml + 30, ly - 4, colour))
        out.append('<text x="%d" y="%d">%s</text>' % (ml + 36, ly, esc(label)))
    out.append(
        '<text x="%d" y="%d" font-size="10" fill="#666" text-anchor="end">dots: median; bars: min–max over repetitions</text>'
        % (ml + pw, h - 4)
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------------
# Markdown


def results_markdown(data, wrong, runs, metas, svgdir, docdir):
    """metas: {np: {key: value}} (the metadata of the run that measured that rank count)."""
    nps = sorted({k[0] for k in data})
    impls = [i for i in IMPLS if any(k[1] == i for k in data)]
    impls += sorted({k[1] for k in data} - set(impls))
    name = lambda i: IMPLS.get(i, (i, None))[0]
    latest = max(metas.values(), key=lambda m: m.get("date", "")) if metas else {}
    md = []
    md.append("_Generated by `scripts/perf-compare.sh` (last run %s); do not edit by hand._" % latest.get("date", "?"))
    md.append("")
    md.append("### Machine and versions")
    md.append("")
    for key, label in (
        ("machine", "Machine"),
        ("cpu", "CPU"),
        ("memory", "Memory"),
        ("kernel", "Kernel"),
        ("mpich", "MPICH"),
        ("openmpi", "Open MPI"),
        ("hcomm", "hcomm"),
    ):
        if key in latest:
            md.append("- %s: %s" % (label, latest[key]))
    md.append("")
    bad = ["%s at %d ranks, %s: %d" % (name(i), n, c, w) for (n, i, c), w in sorted(wrong.items())]
    md.append("Result check (`#wrong`): " + ("**wrong elements: " + "; ".join(bad) + "**" if bad else "every row of every run 0."))
    md.append("")
    for np_ in nps:
        reps = ", ".join("%s %d" % (name(i), runs[(np_, i)]) for i in impls if runs[(np_, i)])
        md.append("### %d ranks" % np_)
        md.append("")
        meta = metas.get(np_, {})
        for key, label in (
            ("date", "Run"),
            ("hcomm", "hcomm"),
            ("load_before", "Load average before the runs"),
            ("load_after", "Load average after the runs"),
            ("settings", "Settings"),
            ("note", "Note"),
        ):
            if meta.get(key):
                md.append("- %s: %s" % (label, meta[key]))
        md.append("")
        md.append("Commands (one repetition, in the order run; the script alternates them `REPS` times):")
        md.append("")
        md.append("```sh")
        md.append(meta.get("command", "scripts/perf-compare.sh"))
        for k in sorted((k for k in meta if k.startswith("cmd.")), key=lambda k: int(k.split(".")[1])):
            md.append(meta[k])
        md.append("```")
        md.append("")
        md.append("Repetitions: %s. Cells: median (min–max) over the repetitions; busbw in GB/s, time in µs." % reps)
        md.append("Ratio: hcomm standalone / the better of MPICH and Open MPI (busbw: higher is better; time: lower is better).")
        md.append("")
        # The gate and aims of issue 7.
        rows = [("allreduce", 1 << 20, "bw"), ("allreduce", 16 << 20, "bw"), ("allreduce", 64 << 20, "bw")]
        rows += [(c, s, "bw") for c in ("reduce_scatter", "allgather", "allgatherv", "bcast", "reduce") for s in (1 << 20, 16 << 20)]
        rows += [("allreduce", 8, "time")]
        md.append("| measure | " + " | ".join(name(i) for i in impls) + " | hcomm / best MPI |")
        md.append("|---|" + "---|" * (len(impls) + 1))
        for coll, want, kind in rows:
            size = nearest_size(data, np_, coll, want)
            if size is None:
                continue
            shown = human(want) if size == want else "%s (%d B)" % (human(want), size)
            label = "%s %s %s" % (coll, shown, "busbw (GB/s)" if kind == "bw" else "time (µs)")
            cells = []
            for i in impls:
                v = data.get((np_, i, coll, size), [])
                cells.append(cell([b for _, b in v], fmt_bw) if kind == "bw" else cell([t for t, _ in v], fmt_t))
            r = ratio_bw(data, np_, coll, size) if kind == "bw" else ratio_time(data, np_, coll, size)
            md.append("| %s | %s | %s |" % (label, " | ".join(cells), fmt_ratio(r)))
        md.append("")
        colls = [c for c in COLL_ORDER if any(k[0] == np_ and k[2] == c for k in data)]
        for coll in colls:
            md.append("![%s busbw, %d ranks](%s/np%d-%s.svg)" % (coll, np_, os.path.relpath(svgdir, docdir), np_, coll))
            md.append("")
        if "allreduce" in colls:
            md.append("![allreduce time, %d ranks](%s/np%d-allreduce-time.svg)" % (np_, os.path.relpath(svgdir, docdir), np_))
            md.append("")
        for coll in colls:
            sizes = sorted({k[3] for k in data if k[0] == np_ and k[2] == coll})
            for kind in ("bw", "time"):
                md.append("<details><summary>%s, %d ranks: %s by size</summary>" % (coll, np_, "busbw (GB/s)" if kind == "bw" else "time (µs)"))
                md.append("")
                md.append("| size | " + " | ".join(name(i) for i in impls) + " | hcomm / best MPI |")
                md.append("|---:|" + "---|" * (len(impls) + 1))
                for s in sizes:
                    cells = []
                    for i in impls:
                        v = data.get((np_, i, coll, s), [])
                        cells.append(cell([b for _, b in v], fmt_bw) if kind == "bw" else cell([t for t, _ in v], fmt_t))
                    r = ratio_bw(data, np_, coll, s) if kind == "bw" else ratio_time(data, np_, coll, s)
                    md.append("| %s | %s | %s |" % (human(s), " | ".join(cells), fmt_ratio(r)))
                md.append("")
                md.append("</details>")
                md.append("")
    return "\n".join(md)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--raw", required=True)
    ap.add_argument("--meta", required=True, nargs="+", help="meta-np<N>.txt files")
    ap.add_argument("--doc", required=True)
    ap.add_argument("--svgdir", required=True)
    a = ap.parse_args()
    metas = {}
    for path in a.meta:
        m = re.search(r"meta-np(\d+)\.txt$", path)
        if not m:
            continue
        meta = {}
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    meta[k] = v
        metas[int(m.group(1))] = meta
    data, wrong, runs = load(a.raw)
    if not data:
        sys.exit("perf_report.py: no results under %s" % a.raw)
    os.makedirs(a.svgdir, exist_ok=True)
    name = lambda i: IMPLS.get(i, (i, "#7f7f7f"))
    for np_ in sorted({k[0] for k in data}):
        for coll in sorted({k[2] for k in data if k[0] == np_}):
            for kind in ("bw", "time"):
                if kind == "time" and coll != "allreduce":
                    continue
                series = []
                for impl in [i for i in IMPLS if i in {k[1] for k in data}] + sorted({k[1] for k in data} - set(IMPLS)):
                    pts = []
                    for (n, i, c, s), v in data.items():
                        if (n, i, c) == (np_, impl, coll):
                            vals = [b for _, b in v] if kind == "bw" else [t for t, _ in v]
                            pts.append((s,) + stats(vals))
                    if pts:
                        series.append((name(impl)[0], name(impl)[1], pts))
                if kind == "bw":
                    svg = svg_plot("%s, %d ranks: busbw vs size" % (coll, np_), series, "busbw (GB/s)")
                    path = os.path.join(a.svgdir, "np%d-%s.svg" % (np_, coll))
                else:
                    svg = svg_plot("%s, %d ranks: time per call vs size" % (coll, np_), series, "time (µs, log scale)", logy=True)
                    path = os.path.join(a.svgdir, "np%d-%s-time.svg" % (np_, coll))
                with open(path, "w") as f:
                    f.write(svg)
    md = results_markdown(data, wrong, runs, metas, a.svgdir, os.path.dirname(os.path.abspath(a.doc)))
    with open(a.doc) as f:
        doc = f.read()
    if BEGIN not in doc or END not in doc:
        sys.exit("perf_report.py: %s lacks the markers %s / %s" % (a.doc, BEGIN, END))
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(a.doc, "w") as f:
        f.write(head + BEGIN + "\n" + md + "\n" + END + tail)
    # A one-screen summary for the terminal: the gate of issue 7.
    for np_ in sorted({k[0] for k in data}):
        for coll, size in (("allreduce", 1 << 20), ("allreduce", 16 << 20), ("allreduce", 64 << 20)):
            print("np=%d %s %s busbw: hcomm / best MPI = %s" % (np_, coll, human(size), fmt_ratio(ratio_bw(data, np_, coll, size))))
        print("np=%d allreduce 8 B time: hcomm / best MPI = %s" % (np_, fmt_ratio(ratio_time(data, np_, "allreduce", 8))))


if __name__ == "__main__":
    main()
