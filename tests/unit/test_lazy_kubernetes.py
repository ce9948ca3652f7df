"""The kubernetes client's re-exporting packages, loaded lazily: the same names, the same objects, fewer modules.

Each check runs in a fresh interpreter: which modules an import loads depends on what the process imported before.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from types import ModuleType
from typing import Any

import pytest

from kubectl_rollout import lazy_kubernetes


def _run(code: str) -> Any:
    """Run ``code`` in a fresh interpreter; what it printed last, as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


#: every name each package's ``__init__`` re-exports, and the module the object it gives comes from
OFFERED = """
    import importlib, inspect, json
    from kubectl_rollout.lazy_kubernetes import exports
    offered = {}
    for package in ("kubernetes", "kubernetes.client", "kubernetes.client.api", "kubernetes.client.models"):
        module = importlib.import_module(package)
        names, _ = exports(inspect.getsource(module), package)
        for name in names:
            value = getattr(module, name)
            offered[f"{package}.{name}"] = getattr(value, "__module__", None) or value.__name__
    print(json.dumps(offered))
"""


def test_every_name_the_eager_client_offers_is_offered_lazily_from_the_same_module() -> None:
    # Eager: the client imported before our package (whose import installs the finder, too late then).
    eager = _run("import kubernetes.client.api, kubernetes.client.models\n" + textwrap.dedent(OFFERED))
    lazy = _run("import kubectl_rollout\n" + textwrap.dedent(OFFERED))
    assert len([n for n in eager if n.startswith("kubernetes.client.models.")]) > 500
    assert eager["kubernetes.client.V1Pod"] == "kubernetes.client.models.v1_pod"
    assert eager["kubernetes.client.CoreV1Api"] == "kubernetes.client.api.core_v1_api"
    assert eager["kubernetes.client"] == "kubernetes.client"
    assert lazy == eager


def test_importing_the_client_loads_no_model_until_one_is_used() -> None:
    loaded = _run("""
        import json, sys
        import kubectl_rollout
        from kubernetes import client
        before = len(sys.modules)
        models_before = sorted(m for m in sys.modules if m.startswith("kubernetes.client.models."))
        pod = client.V1Pod(metadata=client.V1ObjectMeta(name="web-1"))
        print(json.dumps({
            "modules": before,
            "models_before": models_before,
            "v1_pod": "kubernetes.client.models.v1_pod" in sys.modules,
            "name": pod.metadata.name,
            "cached": "V1Pod" in vars(client),
        }))
    """)
    assert loaded["models_before"] == []
    assert loaded["modules"] < 400, loaded["modules"]  # eagerly, the client alone is over 1,400 modules
    assert (loaded["v1_pod"], loaded["name"], loaded["cached"]) == (True, "web-1", True)


def test_the_api_client_finds_nested_models_by_name() -> None:
    pod = _run("""
        import json
        import kubectl_rollout
        from kubernetes import client

        class Answer:
            data = json.dumps({"metadata": {"name": "web-1", "labels": {"app": "web"}},
                               "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
                                                        "ports": [{"containerPort": 80}]}]},
                               "status": {"conditions": [{"type": "Ready", "status": "True"}]}})

        pod = client.ApiClient().deserialize(Answer(), "V1Pod")
        container = pod.spec.containers[0]
        print(json.dumps([type(pod).__name__, type(container).__name__, type(container.ports[0]).__name__,
                          container.image, pod.status.conditions[0].type]))
    """)
    assert pod == ["V1Pod", "V1Container", "V1ContainerPort", "nginx:1.27", "Ready"]


def test_the_submodules_an_eager_import_binds_are_attributes_before_anything_loads_them() -> None:
    reached = _run("""
        import json
        import kubectl_rollout
        import kubernetes
        print(json.dumps([kubernetes.client.models.V1Pod.__name__, kubernetes.client.models.v1_pod.__name__,
                          kubernetes.client.api_client.ApiClient.__name__, kubernetes.client.api.CoreV1Api.__name__]))
    """)
    assert reached == ["V1Pod", "kubernetes.client.models.v1_pod", "ApiClient", "CoreV1Api"]


def test_a_name_no_package_offers_is_an_attribute_error_that_names_it() -> None:
    said = _run("""
        import json
        import kubectl_rollout
        from kubernetes import client
        try:
            client.V1NoSuchThing
        except AttributeError as err:
            print(json.dumps(str(err)))
    """)
    assert said == "module 'kubernetes.client' has no attribute 'V1NoSuchThing'"


@pytest.mark.parametrize(
    ("source", "package", "lazy", "kept"),
    [
        pytest.param(
            "from kubernetes.client.models.v1_pod import V1Pod\n",
            "kubernetes.client",
            {"V1Pod": ("kubernetes.client.models.v1_pod", "V1Pod"), "models": ("kubernetes.client.models", None)},
            [],
            id="a re-export, and the submodule its import binds",
        ),
        pytest.param(
            "from kubernetes.client.models.v1_pod import V1Pod\n",
            "kubernetes.client.models",
            {
                "V1Pod": ("kubernetes.client.models.v1_pod", "V1Pod"),
                "v1_pod": ("kubernetes.client.models.v1_pod", None),
            },
            [],
            id="a model and its module",
        ),
        pytest.param(
            "from kubernetes.client.api_client import ApiClient\nfrom kubernetes.client.api.api_client import x\n",
            "kubernetes.client.api",
            {
                "ApiClient": ("kubernetes.client.api_client", "ApiClient"),
                "x": ("kubernetes.client.api.api_client", "x"),
                "api_client": ("kubernetes.client.api.api_client", None),
            },
            [],
            id="a module of another package binds nothing here",
        ),
        pytest.param(
            "from kubernetes.client.api_client import ApiClient as Client\n",
            "kubernetes.client",
            {
                "Client": ("kubernetes.client.api_client", "ApiClient"),
                "api_client": ("kubernetes.client.api_client", None),
            },
            [],
            id="under another name",
        ),
        pytest.param(
            "from . import client\nfrom . import config\n",
            "kubernetes",
            {"client": ("kubernetes.client", None), "config": ("kubernetes.config", None)},
            [],
            id="a subpackage",
        ),
        pytest.param(
            "from __future__ import absolute_import\n__version__ = '36.0.3'\n",
            "kubernetes.client",
            {},
            ["Assign"],
            id="the version stays, __future__ goes",
        ),
        pytest.param(
            "from kubernetes.client.models import *\nimport os\nfrom os import path\n",
            "kubernetes.client",
            {"models": ("kubernetes.client.models", None)},
            ["ImportFrom", "Import", "ImportFrom"],
            id="what cannot be named in advance runs as written",
        ),
    ],
)
def test_exports_defers_only_what_a_name_says(
    source: str, package: str, lazy: dict[str, tuple[str, str | None]], kept: list[str]
) -> None:
    where, rest = lazy_kubernetes.exports(source, package)
    assert where == lazy
    assert [type(node).__name__ for node in rest.body] == kept


def test_a_package_without_source_loads_as_usual() -> None:
    ran: list[str] = []

    class BytecodeOnly:
        def get_source(self, name: str) -> None:
            return None

        def exec_module(self, module: ModuleType) -> None:
            ran.append(module.__name__)

    module = ModuleType("kubernetes.client")
    loader = lazy_kubernetes._LazyPackageLoader(BytecodeOnly())
    loader.exec_module(module)
    assert ran == ["kubernetes.client"]
    assert loader.get_source("kubernetes.client") is None  # the original loader's other methods answer as theirs
    assert "__getattr__" not in vars(module)


def test_a_lazy_package_keeps_its_own_statements() -> None:
    module = ModuleType("fake_package")
    module.__spec__ = None  # type: ignore[assignment]
    where, rest = lazy_kubernetes.exports("'''doc'''\nANSWER = 42\nfrom json.decoder import JSONDecoder\n", "fake")
    assert where == {}
    exec(compile(rest, "fake", "exec"), module.__dict__)
    lazy_kubernetes.lazy_attributes(module, {"Decoder": ("json.decoder", "JSONDecoder"), "sub": ("json", None)})
    import json as json_module
    from json.decoder import JSONDecoder

    assert (module.__doc__, module.ANSWER) == ("doc", 42)
    assert module.Decoder is JSONDecoder
    assert module.sub is json_module
    assert {"Decoder", "sub", "ANSWER"} <= set(dir(module))
