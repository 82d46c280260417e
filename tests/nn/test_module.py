"""Module: registration, traversal, state dicts, modes, casting and reprs."""

from __future__ import annotations

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn


def mlp() -> nn.Sequential:
    return nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))


class Tower(nn.Module):
    """Parameters in lists, dicts, nested containers, a shared layer and an own parameter."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(2, 3)
        self.blocks = [nn.Linear(3, 3), [nn.Linear(3, 3)]]
        self.heads = {"a": nn.Linear(3, 1), "b": nn.Linear(3, 1)}
        self.again = self.stem  # the same layer twice: listed once
        self.scale = nn.Parameter(np.ones(1, dtype=np.float32))
        self.note = "not a parameter"
        self.constant = tg.ones(3)  # a plain Tensor is neither parameter nor buffer

    def forward(self, x: tg.Tensor) -> tg.Tensor:
        return self.heads["a"](self.blocks[1][0](self.blocks[0](self.stem(x)))) * self.scale


# --------------------------------------------------------------------- registration
def test_parameter_is_a_tensor_that_requires_grad():
    p = nn.Parameter(np.zeros((2, 3), dtype=np.float32))
    assert isinstance(p, tg.Tensor) and p.requires_grad and p.is_leaf
    assert nn.Parameter([1.0], requires_grad=False).requires_grad is False
    assert type(p * 2) is tg.Tensor  # results of ops are plain Tensors
    assert repr(p).startswith("Parameter containing:\ntensor(")


def test_parameter_shares_memory_with_its_array():
    array = np.zeros(3, dtype=np.float32)
    p = nn.Parameter(array)
    array[0] = 5.0
    assert p.numpy()[0] == 5.0


def test_attributes_lists_dicts_and_nesting_are_registered_in_definition_order():
    names = [name for name, _ in Tower().named_parameters()]
    assert names == [
        "scale",  # a module's own parameters come before its children's, as in PyTorch
        "stem.weight", "stem.bias",
        "blocks.0.weight", "blocks.0.bias",
        "blocks.1.0.weight", "blocks.1.0.bias",
        "heads.a.weight", "heads.a.bias",
        "heads.b.weight", "heads.b.bias",
    ]  # fmt: skip


def test_shared_parameters_and_modules_are_listed_once():
    tower = Tower()
    params = list(tower.parameters())
    assert len(params) == len({id(p) for p in params}) == 11
    assert [name for name, _ in tower.named_children()] == [
        "stem", "blocks.0", "blocks.1.0", "heads.a", "heads.b",
    ]  # fmt: skip
    assert len(list(tower.modules())) == 6


def test_tied_weights_are_one_parameter():
    a, b = nn.Linear(3, 3), nn.Linear(3, 3)
    b.weight = a.weight
    model = nn.Sequential(a, b)
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias", "1.bias"]
    assert list(model.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]  # PyTorch too


def test_named_modules_prefixes_and_recursion():
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU(), nn.Linear(2, 1)))
    assert [name for name, _ in model.named_modules()] == ["", "0", "1", "1.0", "1.1"]
    assert [n for n, _ in model.named_parameters(recurse=False)] == []
    assert len(list(model.children())) == 2


def test_a_module_that_refers_to_itself_does_not_loop():
    model = mlp()
    model[0].owner = model  # a back-reference makes a cycle
    assert len(list(model.named_modules())) == 4
    assert len(model.state_dict()) == 4


def test_a_subclass_that_forgets_super_init_still_works():
    class Lazy(nn.Module):
        def __init__(self) -> None:
            self.fc = nn.Linear(2, 2)

        def forward(self, x: tg.Tensor) -> tg.Tensor:
            return self.fc(x)

    model = Lazy()
    assert model.training and len(list(model.parameters())) == 2
    model.eval()
    assert not model.fc.training


def test_assigning_a_plain_tensor_over_a_parameter_is_refused():
    layer = nn.Linear(2, 2)
    with pytest.raises(TypeError, match=r"parameter 'weight'.*copy_"):
        layer.weight = tg.zeros((2, 2))
    layer.bias = None  # None (no bias) is fine
    assert [n for n, _ in layer.named_parameters()] == ["weight"]


def test_buffers_are_in_state_dict_but_not_parameters():
    bn = nn.BatchNorm1d(3)
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias"]
    assert [n for n, _ in bn.named_buffers()] == [
        "running_mean",
        "running_var",
        "num_batches_tracked",
    ]
    assert list(bn.state_dict()) == [
        "weight", "bias", "running_mean", "running_var", "num_batches_tracked",
    ]  # fmt: skip


def test_non_persistent_buffers_are_not_saved():
    module = nn.Module()
    module.register_buffer("kept", tg.zeros(2))
    module.register_buffer("scratch", tg.zeros(2), persistent=False)
    assert [n for n, _ in module.named_buffers()] == ["kept", "scratch"]
    assert list(module.state_dict()) == ["kept"]
    with pytest.raises(TypeError, match="buffer 'kept'"):
        module.kept = np.zeros(2)
    with pytest.raises(KeyError):
        module.register_buffer("a.b", tg.zeros(1))


def test_module_list_and_module_dict():
    blocks = nn.ModuleList([nn.Linear(2, 2), nn.ReLU()])
    blocks.append(nn.Linear(2, 1))
    assert len(blocks) == 3 and isinstance(blocks[-1], nn.Linear)
    assert [n for n, _ in blocks.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    blocks.insert(0, nn.Identity())
    assert [n for n, _ in blocks.named_children()] == ["0", "1", "2", "3"]
    assert isinstance(blocks[1:], nn.ModuleList) and len(blocks[1:]) == 3

    heads = nn.ModuleDict({"cls": nn.Linear(2, 3)})
    heads["box"] = nn.Linear(2, 4)
    assert list(heads) == ["cls", "box"] and "box" in heads
    assert [n for n, _ in heads.named_parameters()] == [
        "cls.weight",
        "cls.bias",
        "box.weight",
        "box.bias",
    ]
    with pytest.raises(TypeError, match="expected a Module"):
        heads["x"] = 3

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(2, 2)])
            self.heads = nn.ModuleDict({"out": nn.Linear(2, 1)})

    assert list(Net().state_dict()) == [
        "layers.0.weight", "layers.0.bias", "heads.out.weight", "heads.out.bias",
    ]  # fmt: skip


def test_sequential_runs_in_order_and_indexes():
    tg.manual_seed(0)
    model = mlp()
    x = tg.randn((5, 4))
    expected = model[2](model[1](model[0](x)))
    np.testing.assert_array_equal(model(x).numpy(), expected.numpy())
    assert len(model) == 3 and isinstance(model[1], nn.ReLU)
    assert isinstance(model[:2], nn.Sequential) and len(model[:2]) == 2
    named = nn.Sequential(OrderedDict([("fc", nn.Linear(4, 2)), ("act", nn.Tanh())]))
    assert list(named.state_dict()) == ["fc.weight", "fc.bias"]
    named.extra = nn.Linear(2, 1)  # an attribute of a container registers too
    named.append(nn.ReLU())
    assert [n for n, _ in named.named_children()] == ["fc", "act", "extra", "3"]  # PyTorch's


def test_a_module_added_to_a_sequential_by_name_runs_in_its_place_as_in_pytorch():
    tg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3))
    model.add_module("act", nn.Tanh())
    model.head = nn.Linear(3, 2)  # an attribute: the same as add_module
    x = tg.randn((5, 4))
    assert model.act is model[1] and model.head is model[2]
    np.testing.assert_array_equal(model(x).numpy(), model.head(model.act(model[0](x))).numpy())
    model.act = nn.ReLU()  # replaced in place, and the fused plan follows
    assert [type(m).__name__ for m in model] == ["Linear", "ReLU", "Linear"]
    np.testing.assert_array_equal(model(x).numpy(), model[2](model[1](model[0](x))).numpy())
    assert model(x).grad_fn.name == "linear_chain"
    del model.act
    assert [n for n, _ in model.named_children()] == ["0", "head"]
    np.testing.assert_array_equal(model(x).numpy(), model.head(model[0](x)).numpy())
    with pytest.raises(TypeError, match=r"cannot assign a int to module 'head' of a Sequential"):
        model.head = 3
    with pytest.raises(AttributeError, match=r"'Sequential' object has no attribute 'act'"):
        model.act  # noqa: B018
    model.note = "kept as a plain attribute"
    assert model.note == "kept as a plain attribute" and len(model) == 2


def test_sequential_runs_linear_and_relu_layers_as_one_op_with_the_same_results():
    tg.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 3, bias=False), nn.ReLU(), nn.Linear(3, 2)
    ).double()
    x = tg.randn((6, 4)).double().requires_grad_()
    out = model(x)
    assert out.grad_fn.name == "linear_chain" and out.grad_fn.parents[0] is x
    assert out.grad_fn.op.steps == ("linear+bias", "relu", "linear", "relu", "linear+bias")
    out.sum().backward()
    fused = [t.grad.numpy().copy() for t in (x, *model.parameters())]
    model.zero_grad()
    x.grad = None
    step_by_step = x
    for layer in model:  # each module on its own: no fusion
        step_by_step = layer(step_by_step)
    assert step_by_step.grad_fn.name == "linear"
    np.testing.assert_allclose(out.numpy(), step_by_step.numpy(), rtol=1e-15)
    step_by_step.sum().backward()
    for a, b in zip(fused, (t.grad.numpy() for t in (x, *model.parameters())), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)


def test_sequential_fuses_only_runs_of_those_exact_layer_types():
    class Shifted(nn.Linear):
        def forward(self, x):
            return super().forward(x) + 1.0

    x = tg.ones((2, 3))
    model = nn.Sequential(Shifted(3, 3), nn.ReLU())
    np.testing.assert_array_equal(model(x).numpy(), (model[0](x)).relu().numpy())
    assert model(x).grad_fn.name == "relu"
    relu_first = nn.Sequential(nn.ReLU(), nn.Linear(3, 2))
    assert relu_first(x).grad_fn.op.steps == ("relu", "linear+bias")
    no_bias = nn.Sequential(nn.Linear(3, 2, bias=False), nn.ReLU())
    node = no_bias(x).grad_fn
    assert node.op.steps == ("linear", "relu") and len(node.parents) == 2
    split = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Tanh(), nn.Linear(3, 2), nn.ReLU())
    out = split(x)
    assert out.grad_fn.op.steps == ("linear+bias", "relu")
    assert out.grad_fn.parents[0].name == "tanh"  # parents are the nodes that made the inputs
    assert out.grad_fn.parents[0].parents[0].op.steps == ("linear+bias", "relu")
    assert nn.Sequential(nn.Linear(3, 2))(x).grad_fn.name == "linear"  # a run of one


def test_sequential_fusion_follows_changes_to_the_layers():
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2, bias=False))
    x = tg.ones((2, 3))
    assert model(x).grad_fn.op.steps == ("linear+bias", "relu", "linear")
    model[0].bias = None
    model[2].weight = nn.Parameter(tg.zeros((4, 3)))
    assert model(x).shape == (2, 4) and model(x).grad_fn.op.steps == ("linear", "relu", "linear")
    model.append(nn.Tanh())
    assert model(x).grad_fn.name == "tanh"
    assert model(x).grad_fn.parents[0].op.steps == ("linear", "relu", "linear")


@pytest.mark.parametrize("copy_model", [copy.deepcopy, lambda m: pickle.loads(pickle.dumps(m))])
def test_a_copied_sequential_runs_its_own_parameters(copy_model):
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2))
    x = tg.ones((1, 3))
    expected = model(x).numpy().copy()  # the fused plan now exists
    copied = copy_model(model)
    with tg.no_grad():
        for p in copied.parameters():
            p.numpy()[...] = 0.0
    np.testing.assert_array_equal(copied(x).numpy(), np.zeros((1, 2)))
    np.testing.assert_array_equal(model(x).numpy(), expected)


# --------------------------------------------------------------------- state dicts
def test_state_dict_keys_and_shapes_follow_pytorch_naming():
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    state = model.state_dict()
    assert {k: v.shape for k, v in state.items()} == {
        "0.weight": (256, 784), "0.bias": (256,), "2.weight": (10, 256), "2.bias": (10,),
    }  # fmt: skip
    assert all(isinstance(v, tg.Tensor) and not v.requires_grad for v in state.values())


def test_state_dict_holds_copies():
    model = mlp()
    state = model.state_dict()
    with tg.no_grad():
        model[0].weight.add_(1.0)
    assert not np.array_equal(state["0.weight"], model[0].weight.numpy())


def test_load_state_dict_round_trip_keeps_parameter_objects():
    tg.manual_seed(0)
    source = mlp()
    tg.manual_seed(1)
    target = mlp()
    weight = target[0].weight
    array, version = weight.numpy(), weight._version
    result = target.load_state_dict(source.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert target[0].weight is weight and weight.numpy() is array  # copied in place
    assert weight._version > version
    for (name, a), b in zip(source.state_dict().items(), target.state_dict().values(), strict=True):
        np.testing.assert_array_equal(a, b, err_msg=name)


def test_load_state_dict_accepts_tensors_and_casts_dtype():
    model = mlp()
    state = {k: tg.tensor(v.astype(np.float64)) for k, v in mlp().state_dict().items()}
    model.load_state_dict(state)
    assert model[0].weight.dtype == np.float32
    np.testing.assert_allclose(model[0].weight.numpy(), state["0.weight"].numpy(), rtol=1e-7)


def test_load_state_dict_reports_every_problem_at_once_and_changes_nothing():
    model = mlp()
    before = model.state_dict()
    state = mlp().state_dict()
    del state["2.bias"]
    state["3.weight"] = np.zeros(1)
    state["0.weight"] = np.zeros((5, 4), dtype=np.float32)
    with pytest.raises(RuntimeError) as info:
        model.load_state_dict(state)
    message = str(info.value)
    assert "missing keys: '2.bias'" in message
    assert "unexpected keys: '3.weight'" in message
    assert "size mismatch for '0.weight': checkpoint shape (5, 4), model shape (3, 4)" in message
    assert "nothing was changed" in message
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value, before[name], err_msg=name)


def test_load_state_dict_non_strict_skips_missing_and_unexpected_but_not_shapes():
    model = mlp()
    state = {"0.weight": np.ones((3, 4), dtype=np.float32), "extra": np.zeros(1)}
    result = model.load_state_dict(state, strict=False)
    assert result.missing_keys == ["0.bias", "2.weight", "2.bias"]
    assert result.unexpected_keys == ["extra"]
    np.testing.assert_array_equal(model[0].weight.numpy(), 1.0)
    with pytest.raises(RuntimeError, match="size mismatch"):
        model.load_state_dict({"0.weight": np.ones((4, 4))}, strict=False)


def test_load_state_dict_refuses_a_lossy_kind_change():
    model = nn.Sequential(nn.BatchNorm1d(2))
    state = model.state_dict()
    state["0.num_batches_tracked"] = np.array(1.5)
    with pytest.raises(RuntimeError, match=r"dtype mismatch for '0\.num_batches_tracked'"):
        model.load_state_dict(state)


# --------------------------------------------------------------------- modes, grads, casting
def test_train_and_eval_are_recursive():
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.5)))
    assert all(m.training for m in model.modules())
    assert model.eval() is model
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())


def test_zero_grad_sets_none_or_zeros():
    model = mlp()
    model(tg.randn((2, 4))).sum().backward()
    model.zero_grad(set_to_none=False)
    assert all(np.all(p.grad.numpy() == 0) for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_apply_visits_children_before_parent():
    model = mlp()
    seen = []
    model.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "ReLU", "Linear", "Sequential"]
    model.apply(lambda m: nn.init.zeros_(m.bias) if isinstance(m, nn.Linear) else None)
    assert np.all(model[0].bias.numpy() == 0) and np.all(model[2].bias.numpy() == 0)


def test_to_double_casts_parameters_and_buffers_in_place():
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    weight = model[0].weight
    assert model.double() is model
    assert model[0].weight is weight and weight.dtype == np.float64
    assert model[1].running_mean.dtype == np.float64
    assert model[1].num_batches_tracked.dtype == np.int64  # integer buffers are left alone
    assert model(tg.randn((4, 2), dtype=np.float64)).dtype == np.float64
    assert model.float()[0].weight.dtype == np.float32
    with pytest.raises(TypeError):
        model.to(np.int32)


def test_deepcopy_gives_an_independent_model():
    model = mlp()
    clone = copy.deepcopy(model)
    with tg.no_grad():
        clone[0].weight.add_(1.0)
    assert not np.array_equal(clone[0].weight.numpy(), model[0].weight.numpy())
    assert isinstance(clone[0].weight, nn.Parameter)


# --------------------------------------------------------------------- repr
def test_repr_matches_pytorch_layout():
    model = nn.Sequential(
        nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.2), nn.Linear(256, 10, bias=False)
    )
    assert repr(model) == (
        "Sequential(\n"
        "  (0): Linear(in_features=784, out_features=256, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): Dropout(p=0.2, inplace=False)\n"
        "  (3): Linear(in_features=256, out_features=10, bias=False)\n"
        ")"
    )


def test_repr_indents_nested_modules():
    model = nn.Sequential(nn.Sequential(nn.Tanh()), nn.BatchNorm1d(4))
    assert repr(model) == (
        "Sequential(\n"
        "  (0): Sequential(\n"
        "    (0): Tanh()\n"
        "  )\n"
        "  (1): BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, "
        "track_running_stats=True)\n"
        ")"
    )


def test_forward_is_required():
    with pytest.raises(TypeError, match="does not define forward"):
        nn.Module()(1)
