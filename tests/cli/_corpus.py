"""Broken inputs for the fuzz corpus: copies of the bundled suite with one thing wrong,
logs that cannot be read, and files of the wrong shape. Built once per test session."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from labcoat._util.limits import MAX_YAML_BYTES
from labcoat.suites import SUITES_DIR

MINI = SUITES_DIR / "mini"
PB_PAPER = "paperbench/papers/tail-averaged-sgd"
NOT_UTF8 = b"\xff\xfe\xfa not UTF-8 \xc3\x28\n"


def _copy_family(root: Path, name: str, family: str) -> Path:
    target = root / name
    shutil.copytree(MINI / family, target / family, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as f:
        f.write(data)


def _zero_weights(path: Path) -> None:
    tree = json.loads(path.read_text())

    def zero(node: dict) -> None:
        node["weight"] = 0
        for child in node.get("sub_tasks", []):
            zero(child)

    for child in tree["sub_tasks"]:
        zero(child)
    path.write_text(json.dumps(tree))


def _deep_rubric(depth: int) -> str:
    """A rubric tree `depth` nodes deep (one leaf at the bottom), as JSON text."""
    leaf = '{"id": "leaf", "requirements": "r", "weight": 1, "sub_tasks": [], '
    leaf += '"task_category": "Code Development"}'
    head = '{"id": "n", "requirements": "r", "weight": 1, "task_category": null, "sub_tasks": ['
    return head * depth + leaf + "]}" * depth


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def build_broken_tasks(root: Path) -> dict[str, Path]:
    """name -> a task folder with exactly one problem."""
    root.mkdir(parents=True)
    out: dict[str, Path] = {}

    def family(name: str, fam: str) -> Path:
        out[name] = _copy_family(root, name, fam)
        return out[name]

    # PaperBench
    (family("pb_no_rubric", "paperbench") / PB_PAPER / "rubric.json").unlink()
    (family("pb_no_paper", "paperbench") / PB_PAPER / "paper.md").unlink()
    (family("pb_rubric_not_utf8", "paperbench") / PB_PAPER / "rubric.json").write_bytes(NOT_UTF8)
    (family("pb_rubric_not_json", "paperbench") / PB_PAPER / "rubric.json").write_text("{nope")
    _zero_weights(family("pb_zero_weights", "paperbench") / PB_PAPER / "rubric.json")
    sidecar = family("pb_unknown_leaf", "paperbench") / PB_PAPER / "labcoat.yaml"
    text = sidecar.read_text()
    first_leaf = text.index("leaf:")
    end = text.index("\n", first_leaf)
    sidecar.write_text(text[:first_leaf] + "leaf: no-such-leaf" + text[end:])
    _append(family("pb_config_not_utf8", "paperbench") / PB_PAPER / "config.yaml", NOT_UTF8)
    (family("pb_config_bad_yaml", "paperbench") / PB_PAPER / "config.yaml").write_text(
        "id: [unclosed\n"
    )
    # RE-Bench (METR task families with labcoat.yaml)
    _append(family("rb_sidecar_not_utf8", "rebench") / "rebench/prefix_sum/labcoat.yaml", NOT_UTF8)
    shutil.rmtree(family("rb_no_oracle_files", "rebench") / "rebench/fix_embedding/reference")
    (family("rb_sidecar_bad_yaml", "rebench") / "rebench/prefix_sum/labcoat.yaml").write_text(
        "tasks: {main: [\n"
    )
    side = family("rb_sidecar_unknown_field", "rebench") / "rebench/prefix_sum/labcoat.yaml"
    side.write_text(side.read_text() + "bogus_field: 1\n")
    # ResearchCodeBench
    _append(
        family("rcb_papers_not_utf8", "researchcodebench") / "researchcodebench/pset/papers.yaml",
        NOT_UTF8,
    )
    (
        family("rcb_papers_bad_yaml", "researchcodebench") / "researchcodebench/pset/papers.yaml"
    ).write_text("- id: [unclosed\n")
    _append(
        family("rcb_paper_not_utf8", "researchcodebench")
        / "researchcodebench/pset/adaptive-huber/paper2code_paper.tex",
        NOT_UTF8,
    )
    # ResearchGym
    _append(
        family("rg_description_not_utf8", "researchgym")
        / "researchgym/ts-attribution/task_description.md",
        NOT_UTF8,
    )
    _append(
        family("rg_sidecar_not_utf8", "researchgym") / "researchgym/ts-attribution/labcoat.yaml",
        NOT_UTF8,
    )
    # bounds: sizes and nesting of task data
    (family("pb_rubric_deep", "paperbench") / PB_PAPER / "rubric.json").write_text(
        _deep_rubric(3000)
    )
    _append(
        family("pb_config_huge", "paperbench") / PB_PAPER / "config.yaml",
        b"# " + b"x" * MAX_YAML_BYTES + b"\n",
    )
    (family("rb_manifest_huge", "rebench") / "rebench/prefix_sum/manifest.yaml").write_bytes(
        b"# " + b"x" * MAX_YAML_BYTES + b"\n"
    )
    _append(
        family("rb_sidecar_deep", "rebench") / "rebench/prefix_sum/labcoat.yaml",
        b"deep: " + b"[" * 3000 + b"]" * 3000 + b"\n",
    )
    laughs = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9)
    )
    _append(
        family("rb_sidecar_aliases", "rebench") / "rebench/prefix_sum/labcoat.yaml", laughs.encode()
    )
    # ids are plain text and said once; paper texts are text
    _append(family("pb_config_dup_id", "paperbench") / PB_PAPER / "config.yaml", b"id: renamed\n")
    (family("pb_id_newline", "paperbench") / PB_PAPER / "config.yaml").write_text(
        'id: "tail-averaged\\nsgd"\ntitle: T\n'
    )
    (family("pb_id_bidi", "paperbench") / PB_PAPER / "config.yaml").write_text(
        'id: "tail-\\u202Edegareva"\ntitle: T\n'
    )
    _append(family("pb_paper_not_utf8", "paperbench") / PB_PAPER / "paper.md", NOT_UTF8)
    rcb_papers = "researchcodebench/pset/papers.yaml"
    _replace(
        family("rcb_papers_dup_key", "researchcodebench") / rcb_papers,
        "- id: adaptive-huber\n",
        "- id: adaptive-huber\n  id: renamed\n",
    )
    _replace(
        family("rcb_id_control", "researchcodebench") / rcb_papers,
        "- id: adaptive-huber\n",
        '- id: "adaptive\\ahuber"\n',
    )
    _replace(
        family("rb_task_newline", "rebench") / "rebench/prefix_sum/labcoat.yaml",
        "\n  main:\n",
        '\n  "ma\\nin":\n',
    )
    _replace(
        family("rg_sota_below_baseline", "researchgym") / "researchgym/ts-attribution/labcoat.yaml",
        "sota: 0.7569",
        "sota: 0.5",
    )
    rg = family("rg_folder_bidi", "researchgym") / "researchgym"
    (rg / "ts-attribution").rename(rg / "ts-\u202enoitubirtta")
    # not task folders at all
    (root / "empty").mkdir()
    out["empty"] = root / "empty"
    (root / "a_file.txt").write_text("not a folder of tasks\n")
    out["a_file"] = root / "a_file.txt"
    return out


def build_bad_logs(root: Path) -> dict[str, Path]:
    """Logs that cannot be read, next to (or without) good ones."""
    from analysis._synthetic import demo_logs

    root.mkdir(parents=True)
    out: dict[str, Path] = {}
    good = root / "logs_good"
    demo_logs(good, epochs=1)
    out["logs_good"] = good
    one_good = sorted(good.rglob("*.eval"))[0]
    mixed = root / "logs_mixed"
    shutil.copytree(good, mixed)
    (mixed / "empty.eval").write_bytes(b"")
    (mixed / "truncated.eval").write_bytes(one_good.read_bytes()[:2000])
    (mixed / "corrupt.eval").write_bytes(b"PK\x03\x04 this is not a zip archive")
    out["logs_mixed"] = mixed
    bad = root / "logs_bad"
    bad.mkdir()
    (bad / "empty.eval").write_bytes(b"")
    (bad / "corrupt.eval").write_bytes(b"garbage")
    out["logs_bad"] = bad
    out["empty_eval"] = bad / "empty.eval"
    out["corrupt_eval"] = bad / "corrupt.eval"
    return out


def build_bad_files(root: Path) -> dict[str, Path]:
    root.mkdir(parents=True)
    out: dict[str, Path] = {}

    def write(name: str, data: str | bytes) -> None:
        path = root / name
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
        out[name.replace(".", "_")] = path

    write("prices_bad.yaml", "openai/gpt-5: [1, 2\n")
    write("prices_field.yaml", "labcoat/scripted: {input: 1.0, outptu: 2.0}\n")
    write("prices_list.yaml", "- 1\n- 2\n")
    write("prices_not_utf8.yaml", NOT_UTF8)
    write("script_not_list.yaml", "tool: bash\n")
    write("script_bad_turn.yaml", "- {tool: 3}\n")
    write("humans_bad.csv", "task,run_id\nx,1\n")
    write("humans_nan.csv", "task,run_id,elapsed_minutes,score\nx,1,ten,0.5\n")
    write("stats_wrong_shape.json", json.dumps({"results": [1, 2]}))
    write("not_json.json", "{nope")
    write("notes.txt", "hello\n")
    write("rubric_not_utf8.json", NOT_UTF8)
    write("rubric_bad.json", json.dumps({"id": "r", "weight": 1}))
    write("secrets_binary.env", b"\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe\x00\x03\n")
    write("secrets_bad.env", "API_KEY=abc\nthis is not a KEY=VALUE line\n")
    (root / "a_folder").mkdir()
    out["a_folder"] = root / "a_folder"
    (root / "no_trees").mkdir()
    out["no_trees"] = root / "no_trees"
    return out
