"""The Kubernetes Deployment of a group sharing one model (deploy/k8s/group): no volume, the model topic on.

Checked as tests/test_deploy.py checks the StatefulSet: the files parse, the
ConfigMap holds only known settings and resolves to a Kafka run with a model
topic and no snapshot directory, the pod's ports, probes and Service agree, and
every pod gets an instance id of its own.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import yaml

from test_deploy import check_resolves, container, run_argv, toml_settings

GROUP = Path(__file__).resolve().parent.parent / "deploy" / "k8s" / "group"


def manifests() -> dict[str, dict]:
    docs = {}
    for path in sorted(GROUP.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                docs[doc["kind"]] = doc
    return docs


def test_a_deployment_without_volumes_runs_the_group_settings(tmp_path):
    docs = manifests()
    assert set(docs) == {"ConfigMap", "Deployment", "Service", "Kustomization"}
    assert all((GROUP / r).is_file() for r in docs["Kustomization"]["resources"])
    deployment = docs["Deployment"]
    spec = deployment["spec"]["template"]["spec"]
    assert "volumeClaimTemplates" not in deployment["spec"]
    assert all("persistentVolumeClaim" not in v for v in spec["volumes"])  # nothing survives a pod: by design
    text = docs["ConfigMap"]["data"]["stream-nb.toml"]
    settings = toml_settings(text, tmp_path, "group.toml")
    assert settings["model_topic"] and "snapshot_dir" not in settings
    c = container(deployment)
    argv = run_argv(c["args"])
    config_path = PurePosixPath(argv[argv.index("--config") + 1])
    (mount,) = [m for m in c["volumeMounts"] if m["name"] == "config"]
    assert PurePosixPath(mount["mountPath"]) == config_path.parent
    (volume,) = [v for v in spec["volumes"] if v["name"] == "config"]
    assert volume["configMap"]["name"] == docs["ConfigMap"]["metadata"]["name"]
    local = tmp_path / config_path.name
    local.write_text(text)
    env = {e["name"]: e for e in c["env"]}
    assert env["STREAM_NB_INSTANCE_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    resolved = check_resolves([str(local) if a == str(config_path) else a for a in argv],
                              {"STREAM_NB_INSTANCE_ID": "stream-nb-group-5d9f-abcde"})
    assert resolved["plan"].module == "connectors.kafka.transactional"
    assert resolved["settings"]["model_topic"] == settings["model_topic"]
    assert resolved["settings"]["instance_id"] == "stream-nb-group-5d9f-abcde"
    # probes, port and Service agree
    (port,) = c["ports"]
    assert port["containerPort"] == settings["metrics_port"]
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port["name"]}
    service = docs["Service"]
    assert service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert service["spec"]["ports"][0]["targetPort"] == port["name"]
    assert spec["terminationGracePeriodSeconds"] > 120
