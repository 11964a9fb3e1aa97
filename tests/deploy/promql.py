"""Metric names used by a PromQL expression, and Grafana's template variables made plain PromQL.

Syntax is promtool's job (the tests run it); this only lists the series an expression selects,
so the tests can compare them with what the app exports.
"""

from __future__ import annotations

import re

# Aggregations, set and binary-operator keywords: identifiers that are never series names.
KEYWORDS = frozenset(
    "sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio"
    " by without on ignoring group_left group_right bool and or unless offset inf nan start end".split()
)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\[\]]*\]")
_LABEL_LIST = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_IDENTIFIER = re.compile(r"(?<![\w.:])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?")
_GRAFANA_VARIABLES = {
    "$__rate_interval": "5m",
    "$__interval": "1m",
    "$__range": "1h",
    "${__rate_interval}": "5m",
    "${__interval}": "1m",
    "${__range}": "1h",
}
_USER_VARIABLE = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")


def plain_promql(expr: str) -> str:
    """Replace Grafana's template variables with values PromQL accepts (intervals, a regex)."""
    for variable, value in _GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    return _USER_VARIABLE.sub(".*", expr)


def metric_names(expr: str) -> set[str]:
    """Every metric (series) name an expression selects, by name or by a ``__name__`` matcher."""
    names = set(re.findall(r'__name__\s*=\s*"([^"]+)"', expr))
    text = _STRING.sub('""', expr)
    text = _MATCHERS.sub(" ", text)
    text = _RANGE.sub(" ", text)
    text = _LABEL_LIST.sub(" ", text)
    for match in _IDENTIFIER.finditer(text):
        name, call = match.group(1), match.group(2)
        if call is None and name not in KEYWORDS:
            names.add(name)
    return names
