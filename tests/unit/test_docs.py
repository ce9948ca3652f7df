"""The docs stay true: every relative link in README.md, docs/*.md and the agent's PROTOCOL.md resolves (anchors
included, by GitHub's heading slugs), every `make TARGET` they name is a Makefile target, and the README stays a
short front page whose first block is the two commands.

Each check is a function over one file, so the tests at the end can show it reports what it should on a
file made broken on purpose.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: the markdown files whose links must resolve
LINKED_FILES = [README, *sorted((ROOT / "docs").glob("*.md")), ROOT / "kubectl_rollout" / "agent" / "PROTOCOL.md"]
#: the markdown files whose `make TARGET`s must be Makefile targets
MAKE_FILES = [README, *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 250

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
#: [text](target) and ![alt](target); the text may hold brackets one level deep
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
EXTERNAL = ("http://", "https://", "mailto:")
#: `make bench-drain`, `make test PYTEST_ARGS=...`; `make bench-*` names a family, not a target
MAKE = re.compile(r"\bmake[ \t\n]+([A-Za-z0-9_.-]+)(?![A-Za-z0-9_.*-])")
MAKEFILE_TARGET = re.compile(r"^([A-Za-z0-9_.-]+):", re.MULTILINE)


def without_code(text: str) -> str:
    """The text with fenced blocks blanked (their lines kept) and code spans replaced by `code`."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return CODE_SPAN.sub("code", text)


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: markup dropped, lowercase, punctuation but '-' and '_' dropped,
    each space a '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Every anchor a markdown file's headings give, duplicates numbered as GitHub numbers them (x, x-1, x-2)."""
    seen: Counter[str] = Counter()
    found = set()
    for heading in HEADING.findall(FENCE.sub("", markdown)):
        slug = github_slug(heading)
        found.add(slug if seen[slug] == 0 else f"{slug}-{seen[slug]}")
        seen[slug] += 1
    return found


def shown(path: Path) -> Path:
    """A path as a failure message names it: from the repository's root when it is inside."""
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def broken_links(path: Path) -> list[str]:
    """Each relative link of a markdown file that leads nowhere, as a message naming the file, the link and the fix."""
    problems = []
    for target in LINK.findall(without_code(path.read_text())):
        if target.startswith(EXTERNAL):
            continue
        where, _, anchor = target.partition("#")
        lexical = Path(os.path.normpath(path.parent.resolve() / where)) if where else path.resolve()
        resolved = lexical.resolve()
        if resolved != lexical and resolved.exists():
            problems.append(
                f"{shown(path)}: link ({target}) goes through a symbolic link, which GitHub does not follow; "
                f"link the real path, {os.path.relpath(resolved, path.parent.resolve())}"
            )
        elif not resolved.exists():
            problems.append(
                f"{shown(path)}: link ({target}) leads to {where}, "
                f"which does not exist relative to {shown(path.parent)}/; "
                "fix the path (links are relative to the file that holds them, and name real paths, e.g. "
                "kubectl_rollout/agent/..., not the agent/ symlink) or restore the file"
            )
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text()):
            problems.append(
                f"{shown(path)}: link ({target}) names #{anchor}, but {resolved.name} has no heading with that slug; "
                f"use one of {sorted(anchors(resolved.read_text()))} or rename the heading back"
            )
    return problems


def makefile_targets() -> set[str]:
    """The Makefile's targets, special ones (.PHONY) left out."""
    return {t for t in MAKEFILE_TARGET.findall((ROOT / "Makefile").read_text()) if not t.startswith(".")}


def unknown_make_targets(path: Path, targets: set[str]) -> list[str]:
    """Each `make TARGET` in a markdown file's code (spans and fenced blocks) that the Makefile does not define."""
    text = path.read_text()
    code = [m.group(0) for m in FENCE.finditer(text)] + [m.group(2) for m in CODE_SPAN.finditer(FENCE.sub("", text))]
    named = sorted({target for snippet in code for target in MAKE.findall(snippet)})
    return [
        f"{shown(path)}: `make {target}` is not a Makefile target; add the target to the Makefile or fix the command "
        f"(targets: {', '.join(sorted(targets))})"
        for target in named
        if target not in targets
    ]


def readme_problems(text: str) -> list[str]:
    """What keeps a README from being the short front page: its length, and its first block not being the two
    commands right after the title."""
    problems = []
    lines = text.splitlines()
    if len(lines) > README_MAX_LINES:
        problems.append(
            f"README.md has {len(lines)} lines, more than {README_MAX_LINES}: move details to a page under docs/ "
            "(by topic) and link it from 'Where to read on'"
        )
    body = [line for line in lines[1:] if line.strip()]
    first_block = FENCE.search(text)
    if not body or not body[0].startswith("```") or first_block is None:
        problems.append(
            "README.md: the first thing after the title must be the code block with `make demo` and `make test`"
        )
    elif not ("make demo" in first_block.group(0) and "make test" in first_block.group(0)):
        problems.append("README.md: its first code block must hold `make demo` and `make test`; put them back there")
    return problems


def name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", LINKED_FILES, ids=name)
def test_every_relative_link_resolves(path: Path) -> None:
    problems = broken_links(path)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", MAKE_FILES, ids=name)
def test_every_make_target_named_is_in_the_makefile(path: Path) -> None:
    problems = unknown_make_targets(path, makefile_targets())
    assert not problems, "\n".join(problems)


def test_the_readme_is_a_short_front_page_led_by_the_two_commands() -> None:
    problems = readme_problems(README.read_text())
    assert not problems, "\n".join(problems)


def test_the_readme_links_every_docs_page() -> None:
    linked = {target.partition("#")[0] for target in LINK.findall(without_code(README.read_text()))}
    missing = [name(page) for page in sorted((ROOT / "docs").glob("*.md")) if name(page) not in linked]
    assert missing == [], f"README.md's 'Where to read on' does not link {missing}; add a line for each"


# The checks themselves, on files broken on purpose.


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("[x](missing.md)", ["link (missing.md) leads to missing.md, which does not exist"]),
        ("![pic](pics/none.png)", ["link (pics/none.png) leads to pics/none.png"]),
        ("[x](other.md#nowhere)", ["link (other.md#nowhere) names #nowhere, but other.md has no heading"]),
        ("[x](#nowhere)", ["link (#nowhere) names #nowhere, but page.md has no heading"]),
        ("[x](other.md#events--o-jsonl) [y](#page-title) [z](other.md#events--o-jsonl-1)", []),
        ("[x](https://example.com/missing) [m](mailto:a@example.com)", []),
        ("`[x](missing.md)`\n\n```\n[y](missing.md)\n```", []),
        ("[x](linked/PROTOCOL.md) [y](real/PROTOCOL.md)", ["link (linked/PROTOCOL.md) goes through a symbolic link"]),
    ],
    ids=[
        "missing file",
        "missing image",
        "missing anchor",
        "missing anchor here",
        "good anchors",
        "external",
        "code",
        "through a symlink",
    ],
)
def test_the_link_checker_reports_what_leads_nowhere(tmp_path: Path, markdown: str, expected: list[str]) -> None:
    (tmp_path / "other.md").write_text(
        "# Other\n\n## Events (`-o jsonl`)\n\n```sh\n# not a heading\n```\n\n## Events (-o jsonl)\n"
    )
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "PROTOCOL.md").write_text("# Protocol\n")
    (tmp_path / "linked").symlink_to("real")
    page = tmp_path / "page.md"
    page.write_text(f"# Page title\n\n{markdown}\n")
    problems = broken_links(page)
    assert len(problems) == len(expected), problems
    for problem, wanted in zip(problems, expected, strict=True):
        assert wanted in problem
        assert str(page) in problem


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("Events (`-o jsonl`)", "events--o-jsonl"),
        (
            "drain --surge: replacements first, so a PDB never holds the drain",
            "drain---surge-replacements-first-so-a-pdb-never-holds-the-drain",
        ),
        ("RBAC: least-privilege Roles", "rbac-least-privilege-roles"),
        ("Why `agent/` and `tui/` at the top are links", "why-agent-and-tui-at-the-top-are-links"),
        ("restart KIND/NAME: a restart by eviction", "restart-kindname-a-restart-by-eviction"),
    ],
)
def test_headings_get_githubs_slugs(heading: str, slug: str) -> None:
    assert github_slug(heading) == slug


def test_the_make_checker_reports_a_target_the_makefile_lacks(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Run `make demo`, then `make bench-nothing`; every `make bench-*` target prints figures.\n\n"
        "```sh\nmake test PYTEST_ARGS=-x\nmake no-such-target\n```\n\nTo make sure, make lint (prose, not code).\n"
    )
    problems = unknown_make_targets(page, {"demo", "test", "lint"})
    assert [p.split("`")[1] for p in problems] == ["make bench-nothing", "make no-such-target"]
    assert all(p.startswith(f"{page}: ") and "add the target to the Makefile" in p for p in problems)


def test_the_makefile_parser_finds_the_targets_the_readme_names() -> None:
    assert {"demo", "test", "setup", "bench-drain", "dist"} <= makefile_targets()


@pytest.mark.parametrize(
    ("readme", "wanted"),
    [
        ("# t\n\n```sh\nmake demo\nmake test\n```\n" + "x\n" * 240, None),
        ("# t\n\n```sh\nmake demo\nmake test\n```\n" + "x\n" * 250, "more than 250"),
        ("# t\n\nIntro first.\n\n```sh\nmake demo\nmake test\n```\n", "first thing after the title"),
        ("# t\n\n```sh\nmake demo\n```\n", "must hold `make demo` and `make test`"),
    ],
    ids=["good", "too long", "intro first", "a command missing"],
)
def test_the_readme_check_reports_what_it_should(readme: str, wanted: str | None) -> None:
    problems = readme_problems(readme)
    if wanted is None:
        assert problems == []
    else:
        assert len(problems) == 1, problems
        assert wanted in problems[0]
