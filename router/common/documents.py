"""Files people write by hand: what a parse error says, in one line."""

from __future__ import annotations

import yaml


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML parse error in one line: the problem and where, without PyYAML's quoted snippet.

    PyYAML's own text spans several lines (the context, a copy of the line, a caret), which a
    log line or a ``REJECTED`` line cannot hold.
    """
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem is None:
        return " ".join(str(exc).split())
    where = f" at line {exc.problem_mark.line + 1}, column {exc.problem_mark.column + 1}" if exc.problem_mark else ""
    context = ""
    if exc.context and exc.context_mark:
        context = f" ({exc.context} from line {exc.context_mark.line + 1}, column {exc.context_mark.column + 1})"
    elif exc.context:
        context = f" ({exc.context})"
    return f"{exc.problem}{where}{context}"
