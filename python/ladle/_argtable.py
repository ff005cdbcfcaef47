"""The table of every operator argument's status (docs/arguments.md), made
from the schemas: ``python -m ladle._argtable [--check]``.

For each operator ladle has, each argument is "implemented", "per sample"
(a tensor argument), "accepted, no effect" (a hint that cannot change
results; its doc says why), or, for an argument DALI 2.4 has and ladle does
not, "refused" (an error naming it; listed only when DALI is installed, since
DALI's own schema is the source). --check compares with the committed file.
"""

import os
import sys

from . import _ladle
from .pipeline import op_schemas

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "..", "..", "docs", "arguments.md")


def _dali_arguments():
    """{ladle op name: set of DALI's argument names}, or None without DALI."""
    try:
        import nvidia.dali.fn as dfn
        from nvidia.dali import backend
    except ImportError:
        return None
    out = {}
    for name in op_schemas():
        target = dfn
        for part in name.split("."):
            target = getattr(target, part, None)
            if target is None:
                break
        schema_name = getattr(target, "_schema_name", None)
        schema = backend.TryGetSchema(schema_name) if schema_name else None
        if schema is not None:
            out[name] = set(schema.GetArgumentNames())
    return out


def _status(arg):
    if arg["no_effect"]:
        return "accepted, no effect"
    return "per sample" if arg["per_sample"] else "implemented"


def render():
    dali = _dali_arguments()
    common = {a["name"]: a for a in _ladle.op_common_args()}
    lines = ["# Operator arguments", "",
             "Made by `python -m ladle._argtable` from the operator schemas (do not edit). Status: implemented; "
             "per sample (may also be a DataNode); accepted, no effect (cannot change results here: the doc says "
             "why); implemented (Python): handled by the operator's Python function (fn.external_source, "
             "fn.python_function); accepted, ignored with a warning; deprecated name (DALI's old name of another argument, "
             "taken with a DeprecationWarning); refused (DALI 2.4 has it, ladle rejects it with "
             "an error naming it).", "",
             "Every operator also takes: " + ", ".join(
                 f"`{n}` ({_status(a)})" for n, a in sorted(common.items())) + ".", ""]
    from . import fn

    for name, schema in sorted(op_schemas().items()):
        if name.startswith("_"):
            continue
        ours = {a["name"]: a for a in schema["args"]}
        # Arguments a Python wrapper of the operator handles (external_source's source, python_function's function)
        wrapper = fn
        for part in name.split("."):
            wrapper = getattr(wrapper, part, None)
        python_args = getattr(wrapper, "python_args", {})
        lines += [f"## fn.{name}", "", "| argument | status | doc |", "|---|---|---|"]
        rows = [(n, _status(a), a["doc"]) for n, a in ours.items()]
        rows += [(a["deprecated_name"], "deprecated name", f"DALI's old name of `{n}`, taken with a DeprecationWarning.")
                 for n, a in ours.items() if a.get("deprecated_name")]
        ours = dict(ours, **{a["deprecated_name"]: a for a in list(ours.values()) if a.get("deprecated_name")})
        rows += [(n, "implemented (Python)" if d else "accepted, ignored with a warning", d or "Has no use here.")
                 for n, d in python_args.items() if n not in ours]
        for arg_name, status, doc in sorted(rows):
            doc = " ".join(doc.split()).replace("|", "\\|")
            lines.append(f"| `{arg_name}` | {status} | {doc} |")
        ours = dict(ours, **python_args)
        if dali is not None and name in dali:
            for arg_name in sorted(dali[name] - set(ours) - set(common)):
                lines.append(f"| `{arg_name}` | refused | DALI 2.4's; not in ladle |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    text = render()
    if "--check" in argv:
        with open(TABLE) as f:
            return 0 if f.read() == text else 1
    with open(TABLE, "w") as f:
        f.write(text)
    print("wrote", os.path.normpath(TABLE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
