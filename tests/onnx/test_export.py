"""tensorgrad.onnx.export: every exported model passes onnx.checker, and ONNX Runtime computes
what tensorgrad computes (float32, 1e-5), also for other batch sizes through dynamic axes;
ops without a mapping are refused by name."""

from __future__ import annotations

import copy
import io
import sys
import types

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn
from tensorgrad.nn import functional as F
from tests import export_models as zoo

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from tensorgrad.onnx import (  # noqa: E402
    OnnxExporterError,
    UnsupportedOperatorError,
    export,
)
from tensorgrad.onnx import exporter as export_module  # noqa: E402

DYNAMIC = {"input": {0: "batch"}, "output": {0: "batch"}}


def run_onnx(path_or_bytes, feeds):
    session = ort.InferenceSession(path_or_bytes, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def expected(model, *arrays):
    with tg.no_grad():
        out = model(*map(tg.tensor, arrays))
    return out.numpy()


def exported(model, *arrays, **options):
    """The model exported to bytes, checked by onnx.checker (export checks it as well)."""
    buffer = io.BytesIO()
    args = tuple(tg.tensor(a) for a in arrays)
    export(model, args if len(args) > 1 else args[0], buffer, **options)
    data = buffer.getvalue()
    onnx.checker.check_model(onnx.load_from_string(data))
    return data


@pytest.mark.parametrize("name", ["mlp", "cnn", "norm_gelu"])
def test_recipes_run_in_onnx_runtime_as_in_tensorgrad_for_any_batch(tmp_path, name):
    model = zoo.trained(name)
    path = tmp_path / f"{name}.onnx"
    export(model, tg.tensor(zoo.sample(name, 4)), path, dynamic_axes=DYNAMIC)
    proto = onnx.load(path)
    onnx.checker.check_model(proto)
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    for batch in (4, 1, 9):
        x = zoo.sample(name, batch, seed=batch)
        (got,) = run_onnx(str(path), {"input": x})
        np.testing.assert_allclose(got, expected(model, x), rtol=1e-5, atol=1e-5)
    stored = {init.name for init in proto.graph.initializer}
    assert set(dict(model.named_parameters())) <= stored  # weights under their state-dict names


def test_the_fused_paths_are_mapped():
    model = nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),  # conv2d_relu_max_pool2d
        nn.Conv2d(4, 4, 3, stride=2, bias=False),
        nn.ReLU(),  # conv2d_relu
        nn.Flatten(),
        nn.Linear(16, 8),
        nn.ReLU(),
        nn.Linear(8, 3),  # linear_chain
    )
    x = np.random.default_rng(1).standard_normal((2, 2, 10, 10)).astype(np.float32)
    with tg.enable_grad():
        out = model(tg.tensor(x, requires_grad=True))
    recorded = [
        type(export_module.record_of(n)[0]).__name__ for n in export_module.recorded_nodes([out])
    ]
    assert recorded == ["Conv2dReluMaxPool", "Conv2dRelu", "Reshape", "LinearChain"]
    data = exported(model, x, dynamic_axes=DYNAMIC)
    types_ = [n.op_type for n in onnx.load_from_string(data).graph.node]
    assert types_.count("Conv") == 2 and "MaxPool" in types_ and types_.count("Gemm") == 2
    for batch in (2, 5):
        xb = np.random.default_rng(batch).standard_normal((batch, 2, 10, 10)).astype(np.float32)
        (got,) = run_onnx(data, {"input": xb})
        np.testing.assert_allclose(got, expected(model, xb), rtol=1e-5, atol=1e-5)


class Everything(nn.Module):
    """A tour of the mapped ops that the recipes do not use."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(6, 6, bias=False)
        self.conv = nn.Conv2d(1, 2, 3, padding=(1, 2), dilation=(1, 2), groups=1)

    def forward(self, x, image):
        h = self.proj(x)
        parts = [
            F.softmax(h, dim=1),
            F.log_softmax(h, dim=-1),
            F.leaky_relu(h, 0.1),
            F.elu(h, 0.7),
            F.softplus(h, beta=2.0, threshold=1.0),
            F.silu(h),
            tg.sigmoid(h),
            h.tanh(),
            h.clamp(-0.2, 0.3),
            h.abs().sqrt(),
            (h.abs() + 0.5).log(),
            h.exp(),
            h.abs().log1p(),
            h.expm1(),
            h.sin() * h.cos(),
            tg.maximum(h, h.T.T * 0.5) - tg.minimum(h, -h),
            h**2 / (1 + h * h),
            tg.where(tg.tensor(np.arange(6) % 2 == 0), h, -h),
            h.cumsum(1),
        ]
        wide = tg.cat(parts, dim=1)
        reductions = tg.stack(
            [
                wide.sum(1),
                wide.mean(1),
                wide.amax(1),
                wide.amin(1),
                wide.var(1),
                wide.std(1, correction=0),
                wide.logsumexp(1),
            ],
            dim=1,
        )
        pictures = self.conv(image)
        pooled = tg.cat(
            [
                F.avg_pool2d(pictures, 2),
                F.max_pool2d(pictures, 3, stride=2, padding=1),
                F.adaptive_avg_pool2d(F.pad(pictures, (1, 1, 0, 0)), (4, 5)),
            ],
            dim=3,
        )
        flat = pooled.reshape(pooled.shape[0], -1)
        mixed = (flat @ tg.ones(flat.shape[1], 3)).transpose(0, 1).transpose(0, 1)
        picked = tg.cat(
            [
                wide[:, 1:9:2],
                wide[..., None, -1],
                wide[:, ::-3][:, :4],
                wide[:, None, 2:4, None][:, 0, :, 0],
                wide[::-1, -2:],
                wide[:, 5:1:-2],
                wide[1:2].expand(wide.shape[0], -1)[:, :2],
                wide[0][None, 3:4].expand(wide.shape[0], 1),
            ],
            dim=1,
        )
        return tg.cat(
            [reductions, mixed, F.gelu(mixed), F.gelu(mixed, approximate="tanh"), picked], 1
        )


def test_a_tour_of_the_mapped_ops():
    tg.manual_seed(3)
    model = Everything()
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 6)).astype(np.float32)
    image = rng.standard_normal((3, 1, 8, 8)).astype(np.float32)
    data = exported(model, x, image, input_names=["x", "image"], output_names=["y"])
    (got,) = run_onnx(data, {"x": x, "image": image})
    np.testing.assert_allclose(got, expected(model, x, image), rtol=1e-5, atol=1e-5)


class Slicer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(4, 4)

    def forward(self, x):
        return self.head(x)[:, [0, 2]]  # an integer-array index


def test_an_op_without_mapping_is_refused_by_name_and_module(tmp_path):
    model = nn.Sequential(nn.Linear(4, 4), Slicer())
    path = tmp_path / "m.onnx"
    named = r"'getitem' \(GetItem\), run by 1 \(Slicer\), with an array or mask index"
    with pytest.raises(UnsupportedOperatorError, match=named):
        export(model, tg.randn(2, 4), path)
    assert not path.exists()
    # a plain function (no modules to name) is refused by op alone
    with pytest.raises(UnsupportedOperatorError, match="'getitem'"):
        export(lambda t: t[t > 0] * 2, tg.randn(2, 4), tmp_path / "f.onnx")
    with pytest.raises(UnsupportedOperatorError, match=r"'cross_entropy' \(CrossEntropy\)"):
        export(lambda t: F.cross_entropy(t, tg.tensor([0, 1])), tg.randn(2, 4), tmp_path / "l.onnx")
    assert issubclass(UnsupportedOperatorError, RuntimeError)


def test_training_mode_dropout_and_batch_shaped_constants_are_refused(tmp_path):
    model = zoo.mlp()  # in training mode: dropout would be a constant mask
    with pytest.raises(OnnxExporterError, match=r"2 \(Dropout\) is in training mode.*eval"):
        export(model, tg.randn(3, 784), tmp_path / "m.onnx")

    def with_batch_constant(t):
        return t + tg.tensor(np.ones((3, 4), np.float32))

    with pytest.raises(
        OnnxExporterError, match=r"other sizes \(batch 2 instead of 3\).*failed.*broadcast"
    ):
        export(with_batch_constant, tg.randn(3, 4), tmp_path / "c.onnx", dynamic_axes=DYNAMIC)
    export(with_batch_constant, tg.randn(3, 4), tmp_path / "c.onnx")  # a fixed batch is fine
    assert not (tmp_path / "m.onnx").exists()


def test_names_options_and_argument_checks(tmp_path):
    model = zoo.trained("norm_gelu")
    x = zoo.sample("norm_gelu", 2)
    data = exported(model, x, input_names=["features"], output_names=["logits"],
                    dynamic_axes={"features": [0], "logits": [0]}, opset_version=13)  # fmt: skip
    proto = onnx.load_from_string(data)
    assert proto.opset_import[0].version == 13
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "features_dynamic_axes_1"
    (got,) = run_onnx(data, {"features": zoo.sample("norm_gelu", 5)})
    np.testing.assert_allclose(got, expected(model, zoo.sample("norm_gelu", 5)), atol=1e-5)
    # the parameters as graph inputs
    data = exported(model, x, export_params=False)
    proto = onnx.load_from_string(data)
    feeds = {"input": x} | {n: p.numpy() for n, p in model.named_parameters()}
    assert {i.name for i in proto.graph.input} >= set(feeds)
    (got,) = run_onnx(data, feeds)
    np.testing.assert_allclose(got, expected(model, x), atol=1e-5)
    with pytest.raises(ValueError, match="neither an input nor an output"):
        exported(model, x, dynamic_axes={"x": [0]})
    with pytest.raises(ValueError, match="opset_version 9"):
        exported(model, x, opset_version=9)
    with pytest.raises(TypeError, match="args must be a Tensor or a tuple"):
        export(model, "x", tmp_path / "a.onnx")
    assert not list(tmp_path.iterdir())


class InPlace(nn.Module):
    def forward(self, x):
        return x.relu_() * 2


def test_inputs_may_be_changed_in_place_and_outputs_must_depend_on_them(tmp_path):
    x = np.array([[-1.0, 2.0, -3.0]], np.float32)
    data = exported(InPlace(), x)
    (got,) = run_onnx(data, {"input": x})
    np.testing.assert_array_equal(got, [[0.0, 4.0, 0.0]])
    with pytest.raises(OnnxExporterError, match="'output' does not depend on the inputs"):
        export(lambda t: tg.ones(2, 3) * 2, tg.randn(2, 3), tmp_path / "c.onnx")
    assert not list(tmp_path.iterdir())
    # what is computed from integer inputs is recorded as well (for the export's run only)
    frozen = nn.Linear(3, 2).requires_grad_(False)
    tokens = np.array([[1, 2, 3]], np.int64)
    data = exported(lambda t: frozen((t + 1).float()), tokens)
    (got,) = run_onnx(data, {"input": tokens})
    np.testing.assert_allclose(got, expected(lambda t: frozen((t + 1).float()), tokens), atol=1e-6)
    assert not any(p.requires_grad for p in frozen.parameters())


def test_deep_graphs_need_no_recursion():
    def deep(t):
        for _ in range(1500):
            t = t * 1.0001 + 0.0001
        return t

    x = np.ones((2, 3), np.float32)
    data = exported(deep, x)
    (got,) = run_onnx(data, {"input": x})
    np.testing.assert_allclose(got, expected(deep, x), rtol=1e-5)


def _as_op_nodes(node, made):
    """The graph as it was before the engine's node records: each op object is the node,
    with ``parents``, ``inputs`` and ``_seq`` of its own (a copy of the op, one per node)."""
    import copy

    if id(node) not in made:
        op = copy.copy(node.op)
        op.inputs, op._seq = node.inputs, node.seq
        made[id(node)] = op
        op.parents = [
            _as_op_nodes(p, made) if export_module._is_node(p) else p for p in node.parents
        ]
    return made[id(node)]


def test_the_walk_reads_nodes_and_ops_that_are_their_own_nodes(monkeypatch):
    model = zoo.trained("cnn")
    x = zoo.sample("cnn", 2)
    reference = exported(model, x)  # through the engine's node records
    with tg.enable_grad():
        out = model(tg.tensor(x, requires_grad=True))
    assert hasattr(out.grad_fn, "op")  # the record; its op is an Op
    made: dict = {}
    monkeypatch.setattr(
        export_module,
        "node_of",
        lambda t: None if t._node is None else _as_op_nodes(t._node, made),
    )
    data = exported(model, x)
    assert made  # the walk went through the ops-as-nodes
    (got,) = run_onnx(data, {"input": x})
    (want,) = run_onnx(reference, {"input": x})
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, expected(model, x), rtol=1e-5, atol=1e-5)


def test_the_inputs_and_the_model_are_left_as_they_were():
    model = zoo.trained("mlp")
    x = tg.tensor(zoo.sample("mlp", 2))
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    export(model, x, io.BytesIO())
    assert not x.requires_grad and x.grad_fn is None
    assert all("forward" not in vars(m) for m in model.modules())
    assert all(np.array_equal(v.numpy(), before[k]) for k, v in model.state_dict().items())
    assert not model.training and not tg.onnx.is_in_onnx_export()


def test_a_missing_onnx_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"pip install 'tensorgrad\[onnx\]'"):
        export(zoo.mlp().eval(), tg.randn(1, 784), io.BytesIO())


def test_export_module_namespace():
    assert isinstance(tg.onnx, types.ModuleType) and tg.onnx.export is export


def test_onnx_runtime_checks_the_file_on_other_inputs_before_it_is_written(tmp_path, monkeypatch):
    """A third run on other values (and sizes): a graph that computes something else is
    refused, here a deliberately wrong mapping of tanh."""
    from tensorgrad import ops
    from tensorgrad.onnx import converters

    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
    monkeypatch.setitem(converters.CONVERTERS, ops.Tanh, converters._same("Sigmoid"))
    path = tmp_path / "m.onnx"
    with pytest.raises(
        OnnxExporterError, match=r"ONNX Runtime on other inputs \(batch 4\).*'output'"
    ):
        export(model, tg.randn(2, 4), path, dynamic_axes={"input": {0: "batch"}})
    assert not path.exists()


def test_the_extra_runs_leave_running_statistics_as_one_forward_does():
    tg.manual_seed(4)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))  # training mode, no dropout
    x = np.random.default_rng(4).standard_normal((5, 3)).astype(np.float32)
    reference = copy.deepcopy(model)
    reference(tg.tensor(x))
    export(model, tg.tensor(x), io.BytesIO(), dynamic_axes={"input": [0]})
    for name, buffer in reference.state_dict().items():
        np.testing.assert_array_equal(model.state_dict()[name].numpy(), buffer.numpy())
