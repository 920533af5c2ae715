"""No function in the product over 80 lines without a comment saying why (issue 58, step 6).

A function's length runs from its ``def`` line to its last line. A longer one passes only if it
carries the marker ``# long: <why>`` with a non-empty reason, either in the comment block
directly above it (above its decorators) or at the top of its body (anywhere from the ``def``
line to its first statement after the docstring). The lab and the tests are not the product.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

PRODUCT = Path(__file__).resolve().parents[2] / "gtsteer"
MAX_LINES = 80
MARKER = re.compile(r"#\s*long:\s*(\S.*)$")

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def _comments(source: str) -> dict[int, str]:
    """Line number -> the comment on it (tokenize, so a '#' inside a string is no comment)."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {tok.start[0]: tok.string for tok in tokens if tok.type == tokenize.COMMENT}


def _body_start(node: FunctionNode) -> int:
    """The line of the first statement after the docstring (or the docstring if it is all)."""
    body = node.body
    if len(body) > 1 and ast.get_docstring(node, clean=False) is not None:
        return body[1].lineno
    return body[0].lineno


def _reason(node: FunctionNode, comments: dict[int, str]) -> str | None:
    """The reason a marker gives for this function's length, or None without one."""
    top = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    above = []
    line = top - 1
    while line in comments:  # the comment block directly above (a line holding only a comment)
        above.append(comments[line])
        line -= 1
    inside = [text for ln, text in comments.items() if node.lineno <= ln <= _body_start(node)]
    for text in above + inside:
        found = MARKER.search(text)
        if found:
            return found.group(1).strip()
    return None


def long_functions(root: Path = PRODUCT) -> list[tuple[str, int, str | None]]:
    """Every function or method under root over MAX_LINES: (where, length, its marked reason)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        comments = _comments(source)
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, FunctionNode):
                continue
            assert node.end_lineno is not None
            length = node.end_lineno - node.lineno + 1
            if length > MAX_LINES:
                # a marker counts only where its line holds nothing but the comment
                own = {ln: c for ln, c in comments.items() if lines[ln - 1].strip() == c}
                where = f"{path.relative_to(root.parent)}:{node.lineno} {node.name}"
                found.append((where, length, _reason(node, own)))
    return found


def test_no_long_function_without_a_reason() -> None:
    unexplained = [f"{at} ({length} lines)" for at, length, why in long_functions() if not why]
    assert not unexplained, (
        f"functions over {MAX_LINES} lines without a '# long: <why>' comment:\n  "
        + "\n  ".join(unexplained)
    )


def test_the_check_finds_long_functions_and_reads_markers(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "m.py").write_text(
        f"def bare():\n{body}\n\n"
        f"# long: a reason above\n@staticmethod\ndef above():\n{body}\n\n"
        f'def top():\n    """Doc."""\n    # long: a reason at the top\n{body}\n\n'
        f"def empty():\n    # long:\n{body}\n\n"
        f"def late():\n    y = 0\n    # long: too late, after the first statement\n{body}\n\n"
        f'def quoted():\n    s = "# long: inside a string"\n{body}\n\n'
        f"def short():\n    # long: not needed\n    return 1\n",
        encoding="utf-8",
    )
    found = {where.split()[-1]: (length, why) for where, length, why in long_functions(tmp_path)}
    assert found == {
        "bare": (MAX_LINES + 1, None),
        "above": (MAX_LINES + 1, "a reason above"),
        "top": (MAX_LINES + 3, "a reason at the top"),
        "empty": (MAX_LINES + 2, None),
        "late": (MAX_LINES + 3, None),
        "quoted": (MAX_LINES + 2, None),
    }
