"""docs/k8s/raycluster.yaml, the KubeRay recipe of docs/scale.md, against the Kubernetes
API's own schema, offline: each pod template is read into the `kubernetes` client's
models (V1PodTemplateSpec, V1PodSpec, V1SecurityContext ...) field by field, and a field
the API does not have fails with its path (the client's own deserializer drops unknown
fields silently, so it cannot be the check). The settings are the measured least
privilege of the mode the pods' user gets (docs/containers.md's table, as
tests/containers/test_least_privilege.py measured it), each Docker option as the
Kubernetes field that gives it, and nothing more: nothing privileged, no capability the
table does not name, the pod's own user namespace (which unmasked proc requires)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from docker_engine import OPTIONS, documented_least

models = pytest.importorskip(
    "kubernetes.client.models", reason="the dev extra's kubernetes client (pip install -e .[dev])"
)

SPEC = Path(__file__).resolve().parents[2] / "docs" / "k8s" / "raycluster.yaml"
SCALE = SPEC.parents[1] / "scale.md"
# the image's users (containers/image-setup.sh) -> the row of the measured table
MODE_OF_UID = {None: "root", 0: "root", 1000: "separate users", 1001: "one user"}
_SCALARS = {"str": str, "int": int, "bool": bool, "float": (int, float), "object": object}
# the values the API accepts where the client's models take any string
_ENUMS = {
    ("V1SeccompProfile", "type"): {"RuntimeDefault", "Unconfined", "Localhost"},
    ("V1AppArmorProfile", "type"): {"RuntimeDefault", "Unconfined", "Localhost"},
    ("V1SecurityContext", "procMount"): {"Default", "Unmasked"},
}


class SchemaError(Exception):
    pass


def strict(data: Any, kind: str, path: str) -> Any:
    """`data` (a YAML value) as the model `kind`, every key a field of it."""
    if kind.startswith("list["):
        if not isinstance(data, list):
            raise SchemaError(f"{path}: expected a list")
        return [strict(item, kind[5:-1], f"{path}[{i}]") for i, item in enumerate(data)]
    if kind.startswith("dict("):
        if not isinstance(data, dict):
            raise SchemaError(f"{path}: expected a mapping")
        inner = kind[5:-1].split(", ", 1)[1]
        return {k: strict(v, inner, f"{path}.{k}") for k, v in data.items()}
    if kind in _SCALARS:
        if not isinstance(data, _SCALARS[kind]) or (kind == "int" and isinstance(data, bool)):
            raise SchemaError(f"{path}: expected {kind}, got {data!r}")
        return data
    model = getattr(models, kind)
    if not isinstance(data, dict):
        raise SchemaError(f"{path}: expected a {kind} mapping")
    fields = {json_name: name for name, json_name in model.attribute_map.items()}
    given = {}
    for key, value in data.items():
        if key not in fields:
            raise SchemaError(f"{path}.{key}: not a field of {kind}")
        allowed = _ENUMS.get((kind, key))
        if allowed is not None and value not in allowed:
            raise SchemaError(f"{path}.{key}: {value!r} is not one of {sorted(allowed)}")
        given[fields[key]] = strict(value, model.openapi_types[fields[key]], f"{path}.{key}")
    try:
        return model(**given)  # the model's own checks: required fields
    except ValueError as ex:
        raise SchemaError(f"{path}: {ex}") from None


def templates(cluster: dict[str, Any]) -> dict[str, Any]:
    """{where: pod template} of a RayCluster (the head's and each worker group's)."""
    spec = cluster["spec"]
    found = {"spec.headGroupSpec.template": spec["headGroupSpec"]["template"]}
    for i, group in enumerate(spec.get("workerGroupSpecs", [])):
        found[f"spec.workerGroupSpecs[{i}].template"] = group["template"]
    return found


def check_cluster(cluster: dict[str, Any]) -> list[Any]:
    assert cluster["apiVersion"] == "ray.io/v1" and cluster["kind"] == "RayCluster"
    return [strict(t, "V1PodTemplateSpec", where) for where, t in templates(cluster).items()]


def _cluster() -> dict[str, Any]:
    return yaml.safe_load(SPEC.read_text())


def docker_options_of(context: Any) -> set[str]:
    """The Docker options (docs/containers.md's names) a container's securityContext gives."""
    given = set()
    if context.seccomp_profile is not None and context.seccomp_profile.type == "Unconfined":
        given.add("seccomp=unconfined")
    if context.app_armor_profile is not None and context.app_armor_profile.type == "Unconfined":
        given.add("apparmor=unconfined")
    if context.proc_mount == "Unmasked":
        given.add("systempaths=unconfined")
    for capability in (context.capabilities.add or []) if context.capabilities else []:
        given.add(f"--cap-add {capability.removeprefix('CAP_')}")
    return given


def measured_options(mode: str) -> set[str]:
    """The option names of the table's least privilege for `mode`."""
    args = documented_least(mode)
    assert args is not None, f"docs/containers.md: no options start {mode}"
    pairs = {OPTIONS[name]: name for name in OPTIONS}
    return {pairs[tuple(args[i : i + 2])] for i in range(0, len(args), 2)}


def test_the_recipe_is_valid_pod_templates_with_the_measured_least_privilege() -> None:
    pods = check_cluster(_cluster())
    assert len(pods) == 2
    for pod in pods:
        assert pod.spec.host_users is False  # the pod's own user namespace
        for container in pod.spec.containers:
            context = container.security_context
            assert context.privileged is None
            mode = MODE_OF_UID[context.run_as_user]
            # exactly what was measured for the pod's user: no more, no less
            assert docker_options_of(context) == measured_options(mode), container.name
    # the recipe's users need no capability at all (the one-user row of the table)
    assert measured_options("one user") == {"seccomp=unconfined", "systempaths=unconfined"}


@pytest.mark.parametrize(
    ("where", "key", "value", "said"),
    [
        # a misspelled field of the security context, of the pod, of the seccomp profile
        ("container", "procMounts", "Unmasked", ".securityContext.procMounts: not a field of V1SecurityContext"),
        ("pod", "hostUser", False, ".spec.hostUser: not a field of V1PodSpec"),
        ("seccomp", "typ", "Unconfined", ".seccompProfile.typ: not a field of V1SeccompProfile"),
        # a value the API refuses, a value of the wrong type
        ("container", "procMount", "Unmask", "'Unmask' is not one of ['Default', 'Unmasked']"),
        ("pod", "hostUsers", "false", ".spec.hostUsers: expected bool, got 'false'"),
    ],
)  # fmt: skip
def test_a_misspelled_field_fails_with_its_path(
    where: str, key: str, value: Any, said: str
) -> None:
    cluster = copy.deepcopy(_cluster())
    pod = cluster["spec"]["workerGroupSpecs"][0]["template"]["spec"]
    context = pod["containers"][0]["securityContext"]
    target = {"pod": pod, "container": context, "seccomp": context["seccompProfile"]}[where]
    target[key] = value
    with pytest.raises(SchemaError) as raised:
        check_cluster(cluster)
    assert said in str(raised.value)
    assert str(raised.value).startswith("spec.workerGroupSpecs[0].template.spec")


def test_a_container_without_its_required_name_fails() -> None:
    cluster = copy.deepcopy(_cluster())
    del cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["name"]
    with pytest.raises(SchemaError, match=r"containers\[0\]: .*`name`"):
        check_cluster(cluster)


def test_scale_md_shows_this_file_as_it_is() -> None:
    """The recipe in the docs is this file, not a copy that can drift from it."""
    body = SPEC.read_text().split("apiVersion:", 1)[1]
    assert f"apiVersion:{body}" in SCALE.read_text()
    section = SCALE.read_text().split("### Kubernetes (KubeRay)")[1].split("\n### ")[0]
    recipe = section.split("```yaml", 1)[1].split("```", 1)[0]
    assert "privileged: true" not in recipe and "SYS_ADMIN" not in recipe
