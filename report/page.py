"""HTML pieces of the morning report: one self-contained page (inline CSS, images by relative path).
Numbers that tests compare with `attn-tuner query` carry data-key attributes (num())."""
import html

CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; } h3 { font-size: 1.05em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.6em 0; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
th { background: #f3f3f3; } td.t, th.t { text-align: left; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.4em 0; }
pre { background: #f7f7f7; padding: 0.5em; font-size: 0.78em; overflow-x: auto; max-height: 22em; }
p.note { background: #fff6dd; border-left: 4px solid #e0b000; padding: 0.4em 0.7em; }
.small { font-size: 0.85em; color: #555; }
.v-win { color: #1a7f37; font-weight: bold; } .v-no_gain { color: #666; } .v-slower { color: #b35900; }
.v-broken { color: #c00; font-weight: bold; }
"""


def esc(x):
    return html.escape("" if x is None else str(x))


def num(key, text):
    """A number shown in the report, tagged for tests: <span class="num" data-key="key">text</span>."""
    return f'<span class="num" data-key="{esc(key)}">{esc(text)}</span>'


def fmt(v, spec="{:.4f}"):
    return "-" if v is None else spec.format(v)


def duration(hours):
    """A duration in hours as text in a fitting unit: "42 s", "12.5 min", "7.95 h"."""
    if hours is None:
        return "-"
    if hours * 3600 < 120:
        return f"{hours * 3600:.0f} s"
    if hours < 2:
        return f"{hours * 60:.1f} min"
    return f"{hours:.2f} h"


def noun(n, word):
    """`word` for a count n: "run" for 1, "runs" otherwise."""
    return word if n == 1 else word + "s"


def table(header, rows, text_cols=()):
    """A table; cells are HTML already (escape text with esc()). Columns in text_cols align left."""
    def cell(tag, i, c):
        cls = ' class="t"' if i in text_cols else ""
        return f"<{tag}{cls}>{c}</{tag}>"
    head = "".join(cell("th", i, esc(h)) for i, h in enumerate(header))
    body = "\n".join("<tr>" + "".join(cell("td", i, c) for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table>\n<tr>{head}</tr>\n{body}\n</table>\n"


def img(name, alt):
    return f'<img src="{esc(name)}" alt="{esc(alt)}">\n'


def note(text, id_=None):
    ident = f' id="{esc(id_)}"' if id_ else ""
    return f'<p class="note"{ident}>{esc(text)}</p>\n'


def section(id_, title, body):
    return f'<section id="{esc(id_)}">\n<h2>{esc(title)}</h2>\n{body}</section>\n'


def document(title, header_html, sections):
    toc = " · ".join(f'<a href="#{esc(i)}">{esc(t)}</a>' for i, t, _ in sections)
    body = "".join(section(i, t, b) for i, t, b in sections)
    return (f"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{esc(title)}</title>\n"
            f"<style>{CSS}</style>\n</head>\n<body>\n<h1>{esc(title)}</h1>\n{header_html}<p>{toc}</p>\n{body}"
            "</body>\n</html>\n")
