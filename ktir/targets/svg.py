"""A static picture of a timeline (SVG): the tracks Perfetto shows, for documentation."""

from __future__ import annotations

from html import escape

from .timeline import QUEUES, Timeline

COLOURS = {
    "transfer": "#4e79a7", "local": "#76b7b2", "matrix": "#e15759", "vector": "#f28e2b",
    "post": "#59a14f", "receive": "#59a14f", "scalar": "#bab0ac",
}


def render_svg(timeline: Timeline, title: str, tiles: list[int] | None = None, channels: int = 2, width: int = 960) -> str:
    """SVG text: one row per resource of the chosen tiles, then the busiest shared channels' use."""
    m = timeline.machine
    shown = tiles if tiles is not None else list(range(min(timeline.n_tiles, 4)))
    rows: list[tuple[int, str]] = []
    used = {(o.record.tile, f"dma {o.lane}" if o.queue == "dma" else o.queue) for o in timeline.ops if o.queue}
    used |= {(o.record.tile, "port") for o in timeline.ops if o.data_start is not None}
    lane_names = [f"dma {i}" for i in range(m.dma_engines)] + ["port"] + [q for q in QUEUES if q != "dma"]
    for t in shown:
        rows.extend((t, lane) for lane in lane_names if (t, lane) in used)
    busiest = sorted(timeline.rate_series, key=lambda c: -timeline.busy.get(c, 0.0))[:channels]
    left, top, row_h, gap, plot_h = 150, 40, 16, 4, 40
    span = timeline.makespan or 1.0
    inner = width - left - 20
    height = top + len(rows) * (row_h + gap) + len(busiest) * (plot_h + 14) + 60

    def x(cycles: float) -> float:
        return left + inner * cycles / span

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="Helvetica, Arial, sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="10" y="20" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    row_y = {}
    y = top
    previous_tile = None
    for tile, lane in rows:
        if previous_tile is not None and tile != previous_tile:
            out.append(f'<line x1="10" x2="{width - 10}" y1="{y - gap / 2:.1f}" y2="{y - gap / 2:.1f}" stroke="#ddd"/>')
        previous_tile = tile
        row_y[(tile, lane)] = y
        out.append(f'<text x="10" y="{y + row_h - 4}">tile {tile} · {escape(lane)}</text>')
        out.append(f'<rect x="{left}" y="{y}" width="{inner}" height="{row_h}" fill="#f6f6f6"/>')
        y += row_h + gap
    for o in timeline.ops:
        if o.queue is None:
            continue
        lane = f"dma {o.lane}" if o.queue == "dma" else o.queue
        colour = COLOURS.get(o.record.kind.value, "#999")
        spans = [(lane, o.start, 0.45)]
        if o.data_start is not None:
            spans = [(lane, o.start, 0.45), ("port", o.data_start, 1.0)]
        for row, start, opacity in spans:
            ry = row_y.get((o.record.tile, row))
            if ry is None:
                continue
            w = max(x(o.end) - x(start), 0.6)
            out.append(f'<rect x="{x(start):.2f}" y="{ry}" width="{w:.2f}" height="{row_h}" fill="{colour}" '
                       f'fill-opacity="{opacity if row != "port" and o.data_start is not None else 1.0}" stroke="white" '
                       f'stroke-width="0.3"><title>{escape(o.record.op)} seq {o.record.seq}</title></rect>')
    y += 8
    for channel in busiest:
        cap = timeline.capacity.get(channel, 1.0)
        out.append(f'<text x="10" y="{y + plot_h / 2 + 4:.1f}">{escape(channel)}</text>')
        out.append(f'<rect x="{left}" y="{y}" width="{inner}" height="{plot_h}" fill="#f6f6f6"/>')
        points = [f"{left},{y + plot_h}"]
        level = 0.0
        for time, rate in timeline.rate_series[channel]:
            yy = y + plot_h * (1 - min(level / cap, 1.0))
            points.append(f"{x(time):.2f},{yy:.2f}")
            level = rate
            yy = y + plot_h * (1 - min(level / cap, 1.0))
            points.append(f"{x(time):.2f},{yy:.2f}")
        points.append(f"{x(span):.2f},{y + plot_h * (1 - min(level / cap, 1.0)):.2f}")
        points.append(f"{x(span):.2f},{y + plot_h}")
        out.append(f'<polygon points="{" ".join(points)}" fill="#9c755f" fill-opacity="0.7"/>')
        out.append(f'<text x="{left + inner - 4}" y="{y + 11}" text-anchor="end" fill="#555">{cap:.0f} B/cycle = 100%</text>')
        y += plot_h + 14
    seconds = m.seconds(span)
    out.append(f'<line x1="{left}" x2="{left + inner}" y1="{y}" y2="{y}" stroke="#333"/>')
    for i in range(6):
        tx = left + inner * i / 5
        label = f"{seconds * i / 5 * 1e6:.3g} µs"
        out.append(f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{y}" y2="{y + 4}" stroke="#333"/>')
        out.append(f'<text x="{tx:.1f}" y="{y + 16}" text-anchor="middle">{label}</text>')
    legend_x = left
    for kind in ("transfer", "matrix", "vector", "local", "receive"):
        out.append(f'<rect x="{legend_x}" y="{y + 26}" width="10" height="10" fill="{COLOURS[kind]}"/>')
        out.append(f'<text x="{legend_x + 14}" y="{y + 35}">{kind}</text>')
        legend_x += 90
    out.append("</svg>")
    return "\n".join(out) + "\n"
