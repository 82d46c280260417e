"""Containers as sequence models use them: ``ModuleList``/``ModuleDict`` editing,
``ParameterList``/``ParameterDict``, weight tying (``head.weight = wte.weight``) and what
``named_parameters``, ``named_modules``, ``apply`` and the state dict make of them, against
PyTorch where it is installed."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import nn


def tiny_gpt(nn_module, framework):
    """minGPT's layout: a ModuleDict of embeddings and a ModuleList of blocks, a tied head,
    a buffer, a ParameterList and a ParameterDict."""

    class GPT(nn_module.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn_module.ModuleDict(
                dict(
                    wte=nn_module.Embedding(10, 4),
                    wpe=nn_module.Embedding(8, 4),
                    drop=nn_module.Dropout(0.1),
                    h=nn_module.ModuleList(
                        [nn_module.Sequential(nn_module.Linear(4, 4), nn_module.GELU())
                         for _ in range(2)]
                    ),
                    ln_f=nn_module.LayerNorm(4),
                )
            )  # fmt: skip
            self.lm_head = nn_module.Linear(4, 10, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # weight tying
            self.register_buffer("mask", framework.ones(3, 3))
            self.plist = nn_module.ParameterList(
                [nn_module.Parameter(framework.zeros(2)), nn_module.Parameter(framework.ones(3))]
            )
            self.pdict = nn_module.ParameterDict(
                {"a": nn_module.Parameter(framework.zeros(1)), "b": framework.zeros(2, 2)}
            )

    return GPT()


def describe(model):
    """Everything about a model's structure that must agree with PyTorch."""
    visited = []
    model.apply(lambda m: visited.append(type(m).__name__))
    return {
        "named_parameters": [n for n, _ in model.named_parameters()],
        "all_names": [n for n, _ in model.named_parameters(remove_duplicate=False)],
        "count": len(list(model.parameters())),
        "numel": sum(p.numel() for p in model.parameters()),
        "state_dict": list(model.state_dict()),
        "named_modules": [n for n, _ in model.named_modules()],
        "children": [n for n, _ in model.named_children()],
        "apply": visited,
        "types": [type(p).__name__ for p in model.parameters()],
    }


def test_tied_weights_are_one_parameter_counted_once():
    model = tiny_gpt(nn, tg)
    assert model.lm_head.weight is model.transformer.wte.weight
    info = describe(model)
    assert info["count"] == 12 and info["numel"] == 130  # 40 of the tied weight counted once
    assert "lm_head.weight" not in info["named_parameters"]  # the first name wins
    assert "lm_head.weight" in info["state_dict"] and "transformer.wte.weight" in info["state_dict"]
    assert info["named_parameters"][-4:] == ["plist.0", "plist.1", "pdict.a", "pdict.b"]
    assert set(info["types"]) == {"Parameter"}  # pdict's plain tensor became a Parameter
    # one gradient, accumulated from both uses
    idx = tg.tensor([[1, 2, 3]])
    logits = model.lm_head(model.transformer.wte(idx))
    logits.sum().backward()
    assert model.lm_head.weight.grad is model.transformer.wte.weight.grad
    # an optimizer sees it once; a step moves both uses
    opt = tg.optim.SGD(model.parameters(), lr=0.1)
    before = model.lm_head.weight.detach().clone()
    opt.step()
    assert not np.allclose(before.numpy(), model.transformer.wte.weight.numpy())
    # a state dict loads back (both keys go into the one parameter)
    model.load_state_dict(model.state_dict())


def test_structure_matches_torch():
    torch = pytest.importorskip("torch")
    assert describe(tiny_gpt(nn, tg)) == describe(tiny_gpt(torch.nn, torch))


def test_state_dicts_load_both_ways_with_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = tiny_gpt(nn, tg), tiny_gpt(torch.nn, torch)
    theirs_state = {k: v.detach().numpy() + 1.0 for k, v in theirs.state_dict().items()}
    ours.load_state_dict(theirs_state)
    for name, value in ours.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), theirs_state[name])
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    np.testing.assert_array_equal(
        theirs.lm_head.weight.detach().numpy(), ours.lm_head.weight.numpy()
    )


def test_module_list_editing():
    layers = nn.ModuleList([nn.ReLU(), nn.Tanh(), nn.Sigmoid()])
    assert isinstance(layers.pop(0), nn.ReLU) and [n for n, _ in layers.named_children()] == [
        "0",
        "1",
    ]
    layers.insert(0, nn.ReLU())
    del layers[1]
    assert [type(m).__name__ for m in layers] == ["ReLU", "Sigmoid"]
    layers[-1] = nn.Tanh()
    layers += [nn.GELU()]
    both = layers + nn.ModuleList([nn.SiLU()])
    assert isinstance(both, nn.ModuleList) and len(both) == 4 and len(layers) == 3
    assert isinstance(layers[:2], nn.ModuleList) and len(layers[:2]) == 2
    with pytest.raises(IndexError, match="index 3 is out of range"):
        layers[3]
    with pytest.raises(TypeError, match="expected a Module, got int"):
        layers.append(3)


def test_module_dict_editing():
    heads = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()})
    assert list(heads) == ["b", "a"]  # insertion order, not sorted
    heads.update([("c", nn.Sigmoid())])
    heads.update({"b": nn.GELU()})
    assert list(heads.keys()) == ["b", "a", "c"] and isinstance(heads["b"], nn.GELU)
    assert isinstance(heads.pop("a"), nn.Tanh) and len(heads) == 2 and heads.c is heads["c"]
    heads.clear()
    assert len(heads) == 0 and list(heads.parameters()) == []


def test_parameter_list_and_dict():
    plist = nn.ParameterList([tg.zeros(2)])
    plist.append(nn.Parameter(tg.ones(3), requires_grad=False))
    plist.extend([tg.zeros(4)])
    assert len(plist) == 3 and all(isinstance(p, nn.Parameter) for p in plist)
    assert plist[1].requires_grad is False and plist[0].requires_grad is True
    assert list(plist.state_dict()) == ["0", "1", "2"] and getattr(plist, "2") is plist[2]
    assert isinstance(plist[1:], nn.ParameterList) and len(plist[-2:]) == 2
    plist[0] = tg.ones(5)
    assert plist[0].shape == (5,) and isinstance(plist[0], nn.Parameter)
    with pytest.raises(TypeError, match="iterable"):
        plist.extend(tg.zeros(2))
    assert "ParameterList(\n    (0): Parameter containing: [torch.FloatTensor of size 5]" in repr(
        plist
    )

    pdict = nn.ParameterDict({"w": tg.zeros(2, 2)})
    pdict["b"] = nn.Parameter(tg.zeros(2))
    pdict.update([("c", tg.ones(1))])
    assert list(pdict) == ["w", "b", "c"] and pdict.w is pdict["w"] and "c" in pdict
    assert [n for n, _ in pdict.named_parameters()] == ["w", "b", "c"]
    assert pdict.get("zz") is None and pdict.pop("c").shape == (1,) and len(pdict) == 2
    assert pdict.setdefault("d", tg.zeros(3)).shape == (3,)
    assert list(pdict.copy()) == ["w", "b", "d"] and pdict.copy()["w"] is pdict["w"]
    with pytest.raises(KeyError):
        pdict["a.b"] = tg.zeros(1)
    with pytest.raises(RuntimeError, match="should not be called"):
        pdict()


def test_containers_copy_pickle_and_cast():
    model = tiny_gpt(nn, tg)
    clone = copy.deepcopy(model)
    assert clone.lm_head.weight is clone.transformer.wte.weight  # the tie survives
    assert describe(clone) == describe(model)
    assert clone.plist[0] is not model.plist[0]
    for container in (model.transformer, model.plist, model.pdict):  # the GPT class is local
        again = pickle.loads(pickle.dumps(container))
        assert list(again.state_dict()) == list(container.state_dict())
    model.double()
    assert model.plist[1].dtype == tg.float64 and model.pdict["b"].dtype == tg.float64


def test_get_submodule_parameter_and_buffer():
    model = tiny_gpt(nn, tg)
    assert model.get_submodule("transformer.h.1.0") is model.transformer.h[1][0]
    assert model.get_parameter("lm_head.weight") is model.lm_head.weight
    assert model.get_parameter("plist.1") is model.plist[1]
    assert model.get_buffer("mask").shape == (3, 3)
    with pytest.raises(AttributeError, match="no attribute `nope`"):
        model.get_submodule("transformer.nope")
