"""Walk a decomposed torch.export graph and partition it into KTIR kernels.

Every graph value is bound to a strided view of a program buffer (`Ref`), a pending
elementwise expression (`Pending`: fused into its single consumer, or materialised by one
kernel when it has several), a list (multi-output ops) or a Python scalar. View ops only
make new refs. Ops whose inputs are all weights or constants are folded with torch at
lowering time into constant buffers.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ktir.lower.torch import experts, kernels, onehot, routing, sdsc, sequence
from ktir.lower.torch.errors import TorchLoweringError
from ktir.lower.torch.export import torch
from ktir.lower.torch.expr import Const, Expr, Op, Pending, Reduce, Row, boundaries, count_ops, is_int, op_names
from ktir.lower.torch.refs import KTIR_TYPES, Buffer, Ref, contiguous_strides
from ktir.lower.torch.writer import Aliases, Kernel


@dataclass
class KernelInfo:
    kernel: Kernel
    kind: str
    nodes: list[str]
    reads: list[str]
    writes: list[str]
    comment: str
    sdsc: object = None  # sdsc.Spec, or the reason the kernel has no SDSC


@dataclass
class Graph:
    """The result of partitioning: buffers, kernels in order, inputs and outputs."""

    aliases: Aliases
    buffers: dict[str, Buffer]
    kernels: list[KernelInfo]
    inputs: list[tuple[str, str]]  # (user input name, buffer)
    outputs: list[Ref]
    folded: list[str] = field(default_factory=list)


UNARY = {
    "neg", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "tanh", "abs", "sin", "cos", "erf", "sigmoid", "silu", "relu", "reciprocal",
}
BINARY = {"add", "sub", "mul", "div", "maximum", "minimum", "gt", "ge", "lt", "le", "eq", "ne"}
# elementwise ops beyond the unary and binary ones (op_elementwise reads their arguments)
ELEMENTWISE = {
    "rsub", "pow", "gelu", "_to_copy", "where", "logical_not", "clamp", "isnan", "isinf", "isfinite", "bitwise_not", "bitwise_and",
    "bitwise_or", "bitwise_xor", "logical_and", "logical_or", "logical_xor", "remainder",
}
# result types of fused elementwise chains (integers compute in i64, floats in f32)
ELEMENT_TYPES = ("f16", "bf16", "f32", "i1", "i8", "i16", "i32", "i64")
# ops with no effect on values (export's runtime assertions)
IGNORED = {"_assert_tensor_metadata", "_assert_scalar", "_assert_async", "sym_constrain_range", "sym_constrain_range_for_size"}
VIEWS = {
    "view", "_unsafe_view", "reshape", "permute", "transpose", "t", "expand", "slice", "select", "unsqueeze", "squeeze",
    "alias", "clone", "detach", "contiguous", "lift_fresh_copy", "split", "split_with_sizes", "unbind",
}


def _ktype(dtype: Any) -> str:
    name = str(dtype).removeprefix("torch.")
    if name not in KTIR_TYPES:
        raise TorchLoweringError(f"element type {name} is not supported")
    return KTIR_TYPES[name]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _to_numpy(t: Any) -> np.ndarray:
    t = t.detach().contiguous()
    if str(t.dtype) == "torch.bfloat16":
        import ml_dtypes

        return np.asarray(t.view(torch.int16).numpy()).view(ml_dtypes.bfloat16)
    return np.asarray(t.numpy())


class Lowering:
    def __init__(self, ep: Any, cores: int) -> None:
        self.ep = ep
        self.cores = cores
        self.aliases = Aliases()
        self.buffers: dict[str, Buffer] = {}
        self.kernels: list[KernelInfo] = []
        self.values: dict[Any, Any] = {}
        self.consts: dict[Any, Any] = {}  # node -> torch tensor (weights, constants, folded)
        self.const_refs: dict[Any, Ref] = {}
        self.const_kind: dict[Any, tuple[str, str]] = {}
        self.inputs: list[tuple[str, str]] = []
        self.folded: list[str] = []

    # ------------------------------------------------------------------ driver

    def run(self) -> Graph:
        from torch.export.graph_signature import InputKind, OutputKind  # type: ignore[import-not-found]

        for out in self.ep.graph_signature.output_specs:
            if out.kind not in (OutputKind.USER_OUTPUT, OutputKind.USER_INPUT_MUTATION):
                # a weight's new value would have to be written back into the weights
                what = {OutputKind.BUFFER_MUTATION: "buffer"}.get(out.kind)
                raise TorchLoweringError(f"the program updates {what or out.kind.name.lower()} {out.target} in place "
                                         "(an in-place op on it): updates of weights and buffers are not lowered")
        missing = self.missing_ops()
        if missing:
            ops = "; ".join(f"{op} ({len(nodes)} node{'s' if len(nodes) > 1 else ''}: {', '.join(nodes[:3])}"
                            f"{', ...' if len(nodes) > 3 else ''})" for op, nodes in missing.items())
            raise TorchLoweringError(f"{len(missing)} op{'s are' if len(missing) > 1 else ' is'} not supported by the "
                                     f"PyTorch lowering: {ops}")
        specs = {s.arg.name: s for s in self.ep.graph_signature.input_specs}
        graph = self.ep.graph_module.graph
        outputs: list[Ref] = []
        for node in graph.nodes:
            try:
                if node.op == "placeholder":
                    spec = specs[node.name]
                    if spec.kind == InputKind.USER_INPUT:
                        self._user_input(node)
                    else:
                        tensor = self.ep.state_dict.get(spec.target) if spec.target in self.ep.state_dict else self.ep.constants[spec.target]
                        self.consts[node] = tensor
                        kind = "parameter" if spec.kind == InputKind.PARAMETER else "constant"
                        self.const_kind[node] = (kind, str(spec.target))
                elif node.op == "call_function":
                    self._call(node)
                elif node.op == "output":
                    outputs = [self.ref(a, node) for a in node.args[0]]
            except TorchLoweringError as e:
                raise TorchLoweringError(f"node {node.name} ({_target_name(node)}): {e}") from None
        return Graph(self.aliases, self.buffers, self.kernels, self.inputs, outputs, self.folded)

    def _user_input(self, node: Any) -> None:
        val = node.meta["val"]
        if 0 in val.shape:
            raise TorchLoweringError(f"input {node.name} has no elements (shape {list(val.shape)}): empty tensors are not lowered")
        if not all(isinstance(d, int) for d in val.shape):
            # a symbolic size (torch.export's dynamic_shapes) reaches every kernel's shapes
            raise TorchLoweringError(f"input {node.name} has a dynamic shape {list(val.shape)}: the lowering needs "
                                     "static shapes (export without dynamic_shapes, or one program per shape)")
        name = f"in_{_safe(node.name)}"
        self.buffers[name] = Buffer(name, _ktype(val.dtype), tuple(val.shape), "input", source=node.name)
        self.inputs.append((node.name, name))
        self.values[node] = Ref(name, _ktype(val.dtype), 0, tuple(val.shape), contiguous_strides(tuple(val.shape)))

    # ------------------------------------------------------------------ values

    def ref(self, arg: Any, user: Any) -> Ref:
        """The strided view bound to a graph value (materialising a pending chain or a constant)."""
        if arg in self.consts:
            return self._const_ref(arg)
        value = self.values.get(arg)
        if isinstance(value, Pending):
            ref = self._materialise(value, arg.name, node=arg)
            self.values[arg] = ref
            return ref
        if isinstance(value, Ref):
            return value
        raise TorchLoweringError(f"argument {arg} is not a tensor")

    def _const_ref(self, node: Any, perm: list[int] | None = None) -> Ref:
        """A weight's buffer; with `perm` (its only reader's view) it is stored in that order,
        so the reader walks it along its sticks (layout chosen by the consumer)."""
        if perm is not None and node not in self.const_refs:
            tensor = self.consts[node].permute(perm).contiguous()
            kind, source = self.const_kind.get(node, ("constant", node.name))
            name = ("w_" if kind == "parameter" else "c_") + _safe(source) + "_t"
            data = _to_numpy(tensor)
            shape = tuple(data.shape)
            self.buffers[name] = Buffer(name, _ktype(tensor.dtype), shape, kind, data=data.reshape(-1), source=source, permutation=list(perm))
            return Ref(name, _ktype(tensor.dtype), 0, shape, contiguous_strides(shape))
        if node not in self.const_refs:
            tensor = self.consts[node]
            kind, source = self.const_kind.get(node, ("constant", node.name))
            prefix = "w_" if kind == "parameter" else "c_"
            name = prefix + _safe(source if kind != "constant" or node in self.const_kind else node.name)
            data = _to_numpy(tensor)
            shape = tuple(data.shape)
            self.buffers[name] = Buffer(name, _ktype(tensor.dtype), shape, kind, data=data.reshape(-1), source=source)
            self.const_refs[node] = Ref(name, _ktype(tensor.dtype), 0, shape, contiguous_strides(shape))
        return self.const_refs[node]

    def expr(self, arg: Any, shape: tuple[int, ...], user: Any, rows: bool = False) -> Expr:
        """An operand of an op whose result has `shape`: a pending chain with one user is fused.
        `rows`: the consumer is an elementwise chain, which may also take a chain holding
        reductions, computed per row and broadcast (other kernels split rows their own way)."""
        if isinstance(arg, bool) or arg is None:
            raise TorchLoweringError(f"operand {arg!r} is not a number or tensor")
        if isinstance(arg, int | float):
            return Const(float(arg))
        value = self.values.get(arg)
        if isinstance(value, Pending) and value.users == 1:
            has_rows = bool(boundaries(value.expr))
            if value.shape == shape and (rows or not has_rows):
                return value.expr
            if rows and has_rows and len(value.shape) == len(shape) and all(a in (1, b) for a, b in zip(value.shape, shape, strict=True)):
                return value.expr if isinstance(value.expr, Reduce) else Row(value.expr, value.shape)
        ref = self.ref(arg, user)
        if ref.ktype not in ELEMENT_TYPES:
            raise TorchLoweringError(f"elementwise ops on {ref.ktype} are not supported")
        return ref.broadcast_to(shape)

    def _new_buffer(self, node_name: str, shape: tuple[int, ...], ktype: str, node: Any = None) -> Ref:
        """A fresh buffer for a result; when `node`'s only user permutes it (keeping the stick
        dim innermost), it is stored in that order so the permuted value is contiguous."""
        if 0 in shape:  # a kernel writing no element would have access tiles of no element
            raise TorchLoweringError(f"the result has no elements (shape {list(shape)}): empty tensors are not lowered")
        name = f"t_{_safe(node_name)}"
        while name in self.buffers:
            name += "_"
        perm = self._consumer_order(node, len(shape)) if node is not None else None
        if perm is None:
            self.buffers[name] = Buffer(name, ktype, shape, "intermediate", source=node_name)
            return Ref(name, ktype, 0, shape, contiguous_strides(shape))
        stored = tuple(shape[d] for d in perm)
        self.buffers[name] = Buffer(name, ktype, stored, "intermediate", source=node_name, permutation=perm)
        inverse = [perm.index(d) for d in range(len(shape))]
        return Ref(name, ktype, 0, stored, contiguous_strides(stored)).permute(inverse)

    @staticmethod
    def _consumer_order(node: Any, rank: int) -> list[int] | None:
        users = list(node.users)
        if len(users) != 1 or rank < 2 or _target_name(users[0]) not in ("permute", "transpose"):
            return None
        user = users[0]
        if _target_name(user) == "permute":
            perm = [d % rank for d in user.args[1]]
        else:
            perm = list(range(rank))
            a, b = user.args[1] % rank, user.args[2] % rank
            perm[a], perm[b] = perm[b], perm[a]
        return perm if perm[-1] == rank - 1 and perm != list(range(rank)) else None

    def _add_kernel(self, kernel: Kernel, kind: str, nodes: list[str], writes: list[str], comment: str, sdsc_spec: object = None) -> None:
        reads = [a for a in kernel.args if a not in writes]
        for w in writes:
            self.buffers[w].writers.append(kernel.name)
        spec = sdsc_spec if sdsc_spec is not None else f"SDSC has no {kind} kernel of this form"
        self.kernels.append(KernelInfo(kernel, kind, nodes, reads, writes, comment, spec))

    def _kname(self, what: str) -> str:
        return f"k{len(self.kernels)}_{_safe(what)}"

    def _materialise(self, p: Pending, node_name: str, dest: Ref | None = None, node: Any = None) -> Ref:
        out = dest or self._new_buffer(node_name, p.shape, p.ktype, node)
        names = op_names(p.expr)
        label = "_".join(dict.fromkeys(reversed(names)))[:40] or "copy"  # innermost op first
        k = kernels.elementwise(self._kname(label), self.aliases, p.expr, out, self.cores)
        rows = boundaries(p.expr)
        what = "op(s) fused, reducing rows" if rows else "elementwise op(s) fused"
        comment = f"{', '.join(p.nodes)}: {count_ops(p.expr)} {what}" if names else f"{', '.join(p.nodes)}: copy"
        spec = "reduces rows" if rows else sdsc.elementwise_spec(p.expr, out, k.division, self.buffers)  # type: ignore[arg-type]
        self._add_kernel(k, "reduction" if rows else "elementwise", p.nodes, [out.buffer], comment, spec)
        return out

    def dense(self, ref: Ref, node: Any, dims: list[int]) -> Ref:
        """A copy of `ref` when one of `dims` is broadcast (stride 0): kernels tile those dims."""
        if all(ref.strides[d] != 0 or ref.shape[d] == 1 for d in dims):
            return ref
        return self._materialise(Pending(ref, ref.shape, ref.ktype, 1, [node.name]), node.name + "_dense")

    # ------------------------------------------------------------------ ops

    def _call(self, node: Any) -> None:
        target = node.target
        if target is operator.getitem:
            seq, i = node.args
            item = self.values[seq][i]
            if item is None:
                raise TorchLoweringError(f"output {i} of {seq.name} is not computed by the lowering")
            self.values[node] = item
            return
        if _target_name(node) in IGNORED:
            self.values[node] = None
            return
        if self._foldable(node):
            self._fold(node)
            return
        handler = self._handler(_target_name(node))
        if handler is None:
            raise TorchLoweringError("this op is not supported by the PyTorch lowering")
        self.values[node] = handler(node)

    def _handler(self, name: str) -> Callable[[Any], Any] | None:
        if name in UNARY or name in BINARY or name in ELEMENTWISE:
            return self.op_elementwise
        if name in VIEWS:
            return self.op_view
        handler: Callable[[Any], Any] | None = getattr(self, f"op_{name}", None)
        return handler

    def missing_ops(self) -> dict[str, list[str]]:
        """Every op of the graph with no lowering (and not folded at lowering time), with the
        nodes that use it: found before the walk, so one error names all of them."""
        from torch.export.graph_signature import InputKind  # type: ignore[import-not-found]

        weights = {s.arg.name for s in self.ep.graph_signature.input_specs if s.kind != InputKind.USER_INPUT}
        constant: set[Any] = set()
        missing: dict[str, list[str]] = {}
        for node in self.ep.graph_module.graph.nodes:
            if node.op == "placeholder":
                if node.name in weights:
                    constant.add(node)
                continue
            if node.op != "call_function" or node.target is operator.getitem:
                continue
            if all(a in constant for a in node.all_input_nodes) and not isinstance(node.meta.get("val"), list | tuple):
                constant.add(node)  # folded with torch while lowering
                continue
            name = _target_name(node)
            if name not in IGNORED and self._handler(name) is None:
                missing.setdefault(f"{getattr(node.target, 'namespace', 'aten')}.{name}", []).append(node.name)
        return missing

    def _foldable(self, node: Any) -> bool:
        tensors = [a for a in node.all_input_nodes]
        return all(t in self.consts for t in tensors) and "val" in node.meta and not isinstance(node.meta["val"], list | tuple)

    def _fold(self, node: Any) -> None:
        def sub(a: Any) -> Any:
            return self.consts.get(a, a)

        args = torch.utils._pytree.tree_map(sub, node.args)
        kwargs = torch.utils._pytree.tree_map(sub, node.kwargs)
        with torch.no_grad():
            self.consts[node] = node.target(*args, **kwargs)
        self.folded.append(node.name)

    def _out(self, node: Any) -> tuple[tuple[int, ...], str]:
        val = node.meta["val"]
        return tuple(val.shape), _ktype(val.dtype)

    def op_elementwise(self, node: Any) -> Pending:
        shape, ktype = self._out(node)
        name = _target_name(node)
        args, kw = node.args, node.kwargs
        if ktype not in ELEMENT_TYPES:
            raise TorchLoweringError(f"elementwise result type {ktype} is not supported")
        ctype = "i64" if is_int(ktype) else "f32"  # integers compute exactly in i64, floats in f32
        x = self.expr(args[0], shape, node, rows=True)
        source = _ktype(args[0].meta["val"].dtype) if hasattr(args[0], "meta") and "val" in args[0].meta else ktype
        if name in UNARY:
            e: Expr = Op(name, (x,), ctype=ctype)
        elif name in ("isnan", "isinf", "isfinite"):
            # integers are finite numbers: x == x always holds, x != x never
            e = Op("eq" if name == "isfinite" else "ne", (x, x)) if is_int(source) else Op(name, (x,))
        elif name == "gelu":
            e = Op("gelu_tanh" if kw.get("approximate", "none") == "tanh" else "gelu", (x,))
        elif name == "pow":
            if not isinstance(args[1], int | float) or ctype != "f32":
                raise TorchLoweringError("only pow(float tensor, number) is supported")
            e = Op("pow", (x,), float(args[1]))
        elif name == "_to_copy":
            if is_int(ktype) and not is_int(source):
                e = Op("to_i64", (x,), ctype="i64")  # truncates toward zero, as torch does
            elif not is_int(ktype) and is_int(source):
                e = Op("to_f32", (x,))
            else:
                e = x
        elif name in ("logical_not", "bitwise_not"):
            e = Op("bitwise_not", (x,), ctype="i64") if is_int(ktype) else Op("logical_not", (x,))
        elif name in ("bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or", "logical_xor"):
            y = self.expr(args[1], shape, node, rows=True)
            if is_int(ktype):
                e = Op(name, (x, y), ctype="i64")
            else:  # booleans as 0/1 masks
                x, y = Op("ne", (x, Const(0.0))), Op("ne", (y, Const(0.0)))
                e = {"and": Op("mul", (x, y)), "or": Op("maximum", (x, y)), "xor": Op("ne", (x, y))}[name.split("_")[1]]
        elif name == "clamp":
            low, high = (list(args[1:]) + [kw.get("min"), kw.get("max")])[:2] if len(args) > 1 else (kw.get("min"), kw.get("max"))
            e = x
            for op, bound, unbounded in (("maximum", low, -math.inf), ("minimum", high, math.inf)):
                if bound is None or bound == unbounded:
                    continue
                # a number, or a tensor broadcast to the result (T5 clamps to a computed bound)
                limit = Const(float(bound)) if isinstance(bound, int | float) else self.expr(bound, shape, node, rows=True)
                e = Op(op, (e, limit), ctype=ctype)
        elif name == "where":
            e = Op("where", (x, self.expr(args[1], shape, node, rows=True), self.expr(args[2], shape, node, rows=True)), ctype=ctype)
        elif name == "remainder":
            e = Op("remainder", (x, self.expr(args[1], shape, node, rows=True)), ctype=ctype)
        elif name in BINARY or name == "rsub":
            y = self.expr(args[1], shape, node, rows=True)
            mode = kw.get("rounding_mode")
            alpha = kw.get("alpha", args[2] if len(args) > 2 else 1)
            if alpha != 1:
                y = Op("mul", (y, Const(float(alpha))), ctype=ctype)
            if name == "div" and mode is not None:
                e = Op({"floor": "floordiv", "trunc": "truncdiv"}[mode], (x, y), ctype=ctype)
            elif name == "div" and ctype == "i64":  # pragma: no cover - torch's true division gives floats
                raise TorchLoweringError("integer true division is not supported")
            else:
                e = Op("sub", (y, x), ctype=ctype) if name == "rsub" else Op(name, (x, y), ctype=ctype)
        else:  # pragma: no cover - dispatch guarantees one of the above
            raise TorchLoweringError("unknown elementwise op")
        nodes = [node.name]
        for a in node.all_input_nodes:
            v = self.values.get(a)
            if isinstance(v, Pending) and v.users == 1 and _contains(e, v.expr):
                nodes = v.nodes + nodes
        return Pending(e, shape, ktype, len(node.users), nodes)

    def op_view(self, node: Any) -> Any:
        name = _target_name(node)
        args = node.args
        src = args[0]
        value = self.values.get(src)
        if name in ("alias", "clone", "detach", "contiguous", "lift_fresh_copy") and isinstance(value, Pending) and value.users == 1:
            return Pending(value.expr, value.shape, value.ktype, len(node.users), value.nodes)
        r = self.ref(src, node)
        shape, _ = self._out(node) if not isinstance(node.meta.get("val"), list | tuple) else ((), "")
        if name in ("view", "_unsafe_view", "reshape"):
            out = r.reshape(shape)
            if out is None:
                copy = self._materialise(Pending(r, r.shape, r.ktype, 1, [node.name]), node.name + "_copy")
                out = copy.reshape(shape)
            return out
        if name == "permute":
            return r.permute([d % r.rank for d in args[1]])
        if name == "transpose":
            perm = list(range(r.rank))
            a, b = args[1] % r.rank, args[2] % r.rank
            perm[a], perm[b] = perm[b], perm[a]
            return r.permute(perm)
        if name == "t":
            return r.permute([1, 0]) if r.rank == 2 else r
        if name == "expand":
            return r.expand(shape)
        if name == "slice":
            dim = args[1] if len(args) > 1 else 0
            start = args[2] if len(args) > 2 and args[2] is not None else 0
            end = args[3] if len(args) > 3 and args[3] is not None else r.shape[dim % r.rank]
            step = args[4] if len(args) > 4 else 1
            return r.slice(dim % r.rank, start, min(end, r.shape[dim % r.rank]), step)
        if name == "select":
            return r.select(args[1] % r.rank, args[2])
        if name == "unsqueeze":
            return r.unsqueeze(args[1])
        if name == "squeeze":
            dims = list(range(r.rank)) if len(args) < 2 else ([args[1]] if isinstance(args[1], int) else list(args[1]))
            return r.squeeze([d % max(r.rank, 1) for d in dims])
        if name in ("alias", "clone", "detach", "contiguous", "lift_fresh_copy"):
            return r
        if name in ("split", "split_with_sizes"):
            dim = (args[2] if len(args) > 2 else 0) % r.rank
            n = r.shape[dim]
            sizes = [args[1]] * math.ceil(n / args[1]) if name == "split" else list(args[1])
            parts, start = [], 0
            for s in sizes:
                parts.append(r.slice(dim, start, min(start + s, n), 1))
                start += s
            return parts
        if name == "unbind":
            dim = (args[1] if len(args) > 1 else 0) % r.rank
            return [r.select(dim, i) for i in range(r.shape[dim])]
        raise TorchLoweringError("this view op is not supported")

    def _reduce(self, node: Any, kind: str, dims: list[int] | None) -> Pending | Ref:
        shape, ktype = self._out(node)
        return self._reduce_node(node, kind, dims, shape, ktype)

    def _reduce_node(self, node: Any, kind: str, dims: list[int] | None, shape: tuple[int, ...], ktype: str,
                     mask: bool = False) -> Pending | Ref:
        """A keepdim reduction stays pending (its consumer computes it per row); otherwise one
        kernel writes it. With `mask`, what is reduced is `x != 0` (any: max, all: min), a bool."""
        src = node.args[0]
        in_shape = tuple(src.meta["val"].shape)
        rank = len(in_shape)
        dims = sorted({d % rank for d in dims}) if dims else list(range(rank))
        if ktype not in ("f16", "bf16", "f32") and not (mask and ktype == "i1"):
            raise TorchLoweringError(f"reductions to {ktype} are not supported")
        if 0 in in_shape:  # its kernel would read access tiles of no element
            raise TorchLoweringError(f"the reduced tensor has no elements (shape {list(in_shape)}): empty tensors are not lowered")
        nodes = self._inlined_nodes(src) + [node.name]
        arg = self.expr(src, in_shape, node, rows=True)
        reduce = Reduce(kind, Op("ne", (arg, Const(0.0))) if mask else arg, tuple(dims), in_shape)
        # the values of max/min(dim) are reached through getitem: written out, not pending
        if shape == reduce.shape and not isinstance(node.meta.get("val"), list | tuple):
            return Pending(reduce, shape, ktype, len(node.users), nodes)
        out_full = self._new_buffer(node.name, shape, ktype)
        out = Ref(out_full.buffer, ktype, 0, reduce.shape, contiguous_strides(reduce.shape))
        self._materialise(Pending(reduce, reduce.shape, ktype, 1, nodes), node.name, dest=out)
        return out_full

    def _inlined_nodes(self, src: Any) -> list[str]:
        v = self.values.get(src)
        return list(v.nodes) if isinstance(v, Pending) and v.users == 1 else []

    def _fused_nodes(self, src: Any, shape: tuple[int, ...]) -> list[str]:
        v = self.values.get(src)
        return list(v.nodes) if isinstance(v, Pending) and v.users == 1 and v.shape == shape and not boundaries(v.expr) else []

    def op_sum(self, node: Any) -> Pending | Ref:
        return self._reduce(node, "sum", list(node.args[1]) if len(node.args) > 1 and node.args[1] is not None else None)

    def op_mean(self, node: Any) -> Pending | Ref:
        return self._reduce(node, "mean", list(node.args[1]) if len(node.args) > 1 and node.args[1] is not None else None)

    def op_amax(self, node: Any) -> Pending | Ref:
        return self._reduce(node, "max", list(node.args[1]) if len(node.args) > 1 else None)

    def op_any(self, node: Any) -> Pending | Ref:
        return self._logical(node, "max")

    def op_all(self, node: Any) -> Pending | Ref:
        return self._logical(node, "min")

    def _logical(self, node: Any, kind: str) -> Pending | Ref:
        """any / all (over every dim, one dim or several): the max / min of `x != 0`."""
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        dims = [dims] if isinstance(dims, int) else (list(dims) if dims else None)
        shape, ktype = self._out(node)
        return self._reduce_node(node, kind, dims, shape, ktype, mask=True)

    def op_amin(self, node: Any) -> Pending | Ref:
        return self._reduce(node, "min", list(node.args[1]) if len(node.args) > 1 else None)

    def _softmax(self, node: Any, log: bool) -> Ref:
        src, dim = node.args[0], node.args[1]
        shape, ktype = self._out(node)
        e = self.expr(src, shape, node)
        nodes = self._fused_nodes(src, shape) + [node.name]
        out = self._new_buffer(node.name, shape, ktype)
        what = "log_softmax" if log else "softmax"
        k = kernels.softmax(self._kname(what), self.aliases, e, shape, dim % len(shape), out, self.cores, log=log)
        self._add_kernel(k, "softmax", nodes, [out.buffer], f"{', '.join(nodes)}: {what} over dim {dim % len(shape)}")
        return out

    def op__softmax(self, node: Any) -> Ref:
        return self._softmax(node, log=False)

    op_softmax = op__softmax

    def op__log_softmax(self, node: Any) -> Ref:
        return self._softmax(node, log=True)

    def op_var(self, node: Any) -> Ref:
        src = node.args[0]
        in_shape = tuple(src.meta["val"].shape)
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        if dims is None or len(dims) != 1:
            raise TorchLoweringError("variance is supported over one dim")
        correction = node.kwargs.get("correction", 1)
        correction = 1 if correction is None else correction
        shape, ktype = self._out(node)
        dim = dims[0] % len(in_shape)
        e = self.expr(src, in_shape, node)
        nodes = self._fused_nodes(src, in_shape) + [node.name]
        out_full = self._new_buffer(node.name, shape, ktype)
        keep = tuple(1 if d == dim else n for d, n in enumerate(in_shape))
        out = Ref(out_full.buffer, ktype, 0, keep, contiguous_strides(keep))
        k = kernels.variance(self._kname("var"), self.aliases, e, in_shape, dim, float(correction), out, self.cores)
        self._add_kernel(k, "reduction", nodes, [out.buffer], f"{', '.join(nodes)}: variance over dim {dim}")
        return out_full

    def _reduce_with_indices(self, node: Any, kind: str) -> Any:
        if len(node.args) < 2:  # max(x): one value
            return self._reduce(node, kind, None)
        if any(u.target is operator.getitem and u.args[1] == 1 for u in node.users):  # the indices are used
            keepdim = bool(node.args[2]) if len(node.args) > 2 else False
            return self._arg_extreme(node, node.args[0], node.args[1], keepdim, kind)
        # the values alone: a reduction
        values = self._reduce_node(node, kind, [node.args[1]], tuple(node.meta["val"][0].shape), _ktype(node.meta["val"][0].dtype))
        return [values, None]

    def _arg_extreme(self, node: Any, src: Any, dim: int | None, keepdim: bool, kind: str) -> list[Ref]:
        """(values, indices) of the max or min along `dim` (None: of the flattened tensor), the
        first index on ties: a top-1 kernel."""
        in_shape = tuple(src.meta["val"].shape)
        if dim is None or not in_shape:
            flat = self.ref(src, node).reshape((math.prod(in_shape),))
            if flat is None:
                flat = self._materialise(Pending(self.ref(src, node), in_shape, self.ref(src, node).ktype, 1, [node.name]), node.name + "_flat")
                flat = flat.reshape((math.prod(in_shape),))
            e: Expr = flat.unsqueeze(0)  # type: ignore[union-attr]
            nodes, in_shape, dim = [node.name], (1, math.prod(in_shape)), 1
        else:
            e = self.expr(src, in_shape, node)
            nodes = self._fused_nodes(src, in_shape) + [node.name]
        dim %= len(in_shape)
        vtype = _ktype(src.meta["val"].dtype)
        if vtype not in ("f16", "bf16", "f32"):
            raise TorchLoweringError(f"arg-reductions of {vtype} are not supported")
        keep = tuple(1 if d == dim else n for d, n in enumerate(in_shape))
        values = self._new_buffer(node.name + "_values", keep, vtype)
        indices = self._new_buffer(node.name + "_indices", keep, "i64")
        k = routing.topk(self._kname(f"arg{kind}"), self.aliases, e, list(in_shape), dim, 1, kind == "max", values, indices, self.cores)
        self._add_kernel(k, "topk", nodes, [values.buffer, indices.buffer], f"{', '.join(nodes)}: {kind} and its index over dim {dim} of {list(in_shape)}")
        shape = tuple(node.meta["val"][0].shape if isinstance(node.meta["val"], list | tuple) else node.meta["val"].shape)
        if keepdim and len(shape) == len(keep):
            return [values, indices]
        return [values.reshape(shape) or values, indices.reshape(shape) or indices]

    def op_argmax(self, node: Any) -> Ref:
        return self._arg_extreme(node, node.args[0], node.args[1] if len(node.args) > 1 else None, bool(node.args[2]) if len(node.args) > 2 else False, "max")[1]

    def op_argmin(self, node: Any) -> Ref:
        return self._arg_extreme(node, node.args[0], node.args[1] if len(node.args) > 1 else None, bool(node.args[2]) if len(node.args) > 2 else False, "min")[1]

    def op_max(self, node: Any) -> Any:
        return self._reduce_with_indices(node, "max")

    def op_min(self, node: Any) -> Any:
        return self._reduce_with_indices(node, "min")

    def op_native_layer_norm(self, node: Any) -> list[Ref | None]:
        src, normalized, w, b, eps = node.args
        shape, ktype = tuple(src.meta["val"].shape), _ktype(node.meta["val"][0].dtype)
        if len(normalized) != 1:
            raise TorchLoweringError("layer norm over more than one dim is not supported")
        e = self.expr(src, shape, node)
        nodes = self._fused_nodes(src, shape) + [node.name]
        weight = self.ref(w, node) if w is not None else None
        bias = self.ref(b, node) if b is not None else None
        out = self._new_buffer(node.name, shape, ktype)
        k = kernels.layer_norm(self._kname("layer_norm"), self.aliases, e, shape, weight, bias, float(eps), out, self.cores)
        self._add_kernel(k, "layer_norm", nodes, [out.buffer], f"{', '.join(nodes)}: layer norm over the last dim")
        return [out, None, None]

    def _matmul(self, node: Any, a: Ref, b: Ref, bias: Ref | None, what: str) -> Ref:
        shape, ktype = self._out(node)
        a = self.dense(a, node, [a.rank - 2, a.rank - 1])
        b = self.dense(b, node, [b.rank - 2, b.rank - 1])
        out_full = self._new_buffer(node.name, shape, ktype)
        mshape = a.shape[:-1] + (b.shape[-1],)
        out = Ref(out_full.buffer, ktype, 0, mshape, contiguous_strides(mshape))
        k = kernels.matmul(self._kname(what), self.aliases, a, b, bias, out, self.cores)
        m, kd, n = a.shape[-2], a.shape[-1], b.shape[-1]
        spec = sdsc.matmul_spec(a, b, bias, out, k.division, self.buffers)  # type: ignore[arg-type]
        self._add_kernel(k, "matmul", [node.name], [out.buffer], f"{node.name}: {what} {list(mshape[:-2])} x ({m}x{kd} @ {kd}x{n})", spec)
        return out_full

    def op_linear(self, node: Any) -> Ref:
        x, wnode = self.ref(node.args[0], node), node.args[1]
        bias = self.ref(node.args[2], node) if len(node.args) > 2 and node.args[2] is not None else None
        a = x if x.rank >= 2 else x.unsqueeze(0)
        if wnode in self.consts and len(wnode.users) == 1:
            wt = self._const_ref(wnode, [1, 0])  # stored [in, out]: out along the sticks
        else:
            wt = self.ref(wnode, node).permute([1, 0])
        b = wt.broadcast_to(a.shape[:-2] + wt.shape)
        return self._matmul(node, a, b, bias, "linear")

    def op_mm(self, node: Any) -> Ref:
        return self._matmul(node, self.ref(node.args[0], node), self.ref(node.args[1], node), None, "mm")

    def op_bmm(self, node: Any) -> Ref:
        return self._matmul(node, self.ref(node.args[0], node), self.ref(node.args[1], node), None, "bmm")

    def op_addmm(self, node: Any) -> Ref:
        bias = self.ref(node.args[0], node)
        if bias.rank != 1 or node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
            raise TorchLoweringError("addmm is supported with a 1-D bias and alpha = beta = 1")
        return self._matmul(node, self.ref(node.args[1], node), self.ref(node.args[2], node), bias, "addmm")

    def op_scaled_dot_product_attention(self, node: Any) -> Ref:
        args = list(node.args) + [None] * 6
        q, k, v = (self.ref(a, node) for a in args[:3])
        attn_mask = args[3] if args[3] is not None else node.kwargs.get("attn_mask")
        dropout = args[4] if args[4] is not None else node.kwargs.get("dropout_p", 0.0)
        causal = args[5] if args[5] is not None else node.kwargs.get("is_causal", False)
        scale = node.kwargs.get("scale", args[6] if len(args) > 6 else None)
        if dropout:
            raise TorchLoweringError("dropout is not supported")
        if q.rank < 3:
            raise TorchLoweringError("attention needs [..., heads, seq, dim] inputs")
        if q.shape[-3] % k.shape[-3]:
            raise TorchLoweringError(f"{q.shape[-3]} query heads cannot share {k.shape[-3]} key/value heads")
        shape, ktype = self._out(node)
        q, k, v = (self.dense(r, node, [r.rank - 2, r.rank - 1]) for r in (q, k, v))
        mask = None
        if attn_mask is not None:
            mask = self.ref(attn_mask, node).broadcast_to(q.shape[:-1] + (k.shape[-2],))
            if mask.ktype not in ("i1", "f16", "bf16", "f32"):
                raise TorchLoweringError(f"an attention mask of {mask.ktype} is not supported")
        out = self._new_buffer(node.name, shape, ktype, node)
        scale = float(scale) if scale is not None else 1.0 / math.sqrt(q.shape[-1])
        kern = kernels.attention(self._kname("attention"), self.aliases, q, k, v, out, bool(causal), scale, self.cores, mask)
        what = ("causal attention" if causal else "attention") + (" with a mask" if mask is not None else "")
        self._add_kernel(kern, "attention", [node.name], [out.buffer], f"{node.name}: {what}, q {list(q.shape)}, kv {list(k.shape)}")
        return out

    def op_embedding(self, node: Any) -> Ref:
        weight = self.ref(node.args[0], node)
        ids = self.ref(node.args[1], node)
        shape, ktype = self._out(node)
        flat = ids.reshape((ids.numel,))
        if flat is None or ids.ktype not in ("i32", "i64"):
            raise TorchLoweringError("embedding indices must be a contiguous integer tensor")
        out_full = self._new_buffer(node.name, shape, ktype)
        out = Ref(out_full.buffer, ktype, 0, (ids.numel, weight.shape[1]), contiguous_strides((ids.numel, weight.shape[1])))
        k = kernels.embedding(self._kname("embedding"), self.aliases, weight, flat, out, self.cores)
        self._add_kernel(k, "embedding", [node.name], [out.buffer], f"{node.name}: embedding gather of {ids.numel} rows of {list(weight.shape)}")
        return out_full

    def op_cat(self, node: Any) -> Ref:
        tensors = node.args[0]
        dim = node.args[1] if len(node.args) > 1 else 0
        shape, ktype = self._out(node)
        dim %= len(shape)
        out = self._new_buffer(node.name, shape, ktype)
        start = 0
        for t in tensors:
            tshape = tuple(t.meta["val"].shape)
            if math.prod(tshape) == 0:
                continue
            dest = out.slice(dim, start, start + tshape[dim], 1)
            value = self.values.get(t)
            if isinstance(value, Pending) and value.users == 1:
                self._materialise(Pending(value.expr, value.shape, ktype, 1, value.nodes + [node.name]), node.name, dest)
            else:
                self._materialise(Pending(self.ref(t, node), tshape, ktype, 1, [node.name]), node.name, dest)
            start += tshape[dim]
        return out


    def op_topk(self, node: Any) -> list[Ref]:
        args = list(node.args) + [None] * 4
        src, count = args[0], int(args[1])
        dim = -1 if args[2] is None else args[2]
        largest = True if args[3] is None else bool(args[3])
        in_shape = tuple(src.meta["val"].shape)
        vshape, vtype = tuple(node.meta["val"][0].shape), _ktype(node.meta["val"][0].dtype)
        itype = _ktype(node.meta["val"][1].dtype)
        if vtype not in ("f16", "bf16", "f32"):
            raise TorchLoweringError(f"topk of {vtype} is not supported")
        vector = len(in_shape) == 1  # a 1-D input is lowered as one row
        if vector:
            e: Expr = self.ref(src, node).unsqueeze(0)
            nodes = [node.name]
            in_shape, vshape, dim = (1, *in_shape), (1, *vshape), -1
        else:
            e = self.expr(src, in_shape, node)
            nodes = self._fused_nodes(src, in_shape) + [node.name]
        dim %= len(in_shape)
        values = self._new_buffer(node.name + "_values", vshape, vtype)
        indices = self._new_buffer(node.name + "_indices", vshape, itype)
        k = routing.topk(self._kname("topk"), self.aliases, e, list(in_shape), dim, count, largest, values, indices, self.cores)
        what = "largest" if largest else "smallest"
        self._add_kernel(k, "topk", nodes, [values.buffer, indices.buffer], f"{', '.join(nodes)}: top {count} ({what}) over dim {dim} of {list(in_shape)}")
        return [values.squeeze([0]), indices.squeeze([0])] if vector else [values, indices]

    def op_index(self, node: Any) -> Ref:
        """x[..., ids, ...] (one integer tensor indexing dim d, the dims before it taken whole): a
        row gather through an indirect access tile over x with dim d moved first; the result is
        the view of the gathered rows with the ids' dims put back at d."""
        src, index = node.args[0], list(node.args[1])
        given = [i for i, t in enumerate(index) if t is not None]
        if len(given) != 1:
            raise TorchLoweringError("indexing with one integer tensor (x[ids], x[:, ids], ...) is supported, "
                                     f"not with {len(given)}")
        d = given[0]
        n = src.meta["val"].shape[d]
        ids = self.ref(index[d], node)
        if index[d] in self.consts:
            if bool((self.consts[index[d]] < 0).any()):  # x[-1]: counted from the end
                data = _to_numpy(self.consts[index[d]] % n)
                name = f"c_{_safe(node.name)}_ids"
                self.buffers[name] = Buffer(name, ids.ktype, tuple(data.shape), "constant", data=data.reshape(-1), source=node.name)
                ids = Ref(name, ids.ktype, 0, tuple(data.shape), contiguous_strides(tuple(data.shape)))
        elif is_int(ids.ktype):  # computed ids may be negative: wrap them as torch does
            wrapped = Op("where", (Op("lt", (ids, Const(0.0))), Op("add", (ids, Const(float(n))), ctype="i64"), ids), ctype="i64")
            ids = self._materialise(Pending(wrapped, ids.shape, ids.ktype, 1, [node.name]), node.name + "_ids")
        return self._gather(node, src, d, ids)

    def op_index_select(self, node: Any) -> Ref:
        src, dim, index = node.args[:3]
        return self._gather(node, src, dim % len(src.meta["val"].shape), self.ref(index, node))

    def _gather(self, node: Any, src: Any, d: int, ids: Ref) -> Ref:
        if ids.ktype not in ("i32", "i64"):
            raise TorchLoweringError(f"indexing with a {ids.ktype} tensor is not supported (integer ids only)")
        table = self.ref(src, node)
        rest = table.shape[:d] + table.shape[d + 1:]
        if d:
            table = table.permute([d, *range(d), *range(d + 1, table.rank)])
        width = math.prod(rest)
        flat_table = table.reshape((table.shape[0], width))
        if flat_table is None:
            copy = self._materialise(Pending(table, table.shape, table.ktype, 1, [node.name]), node.name + "_table")
            flat_table = copy.reshape((table.shape[0], width))
        flat_ids = ids.reshape((ids.numel,))
        if flat_table is None or flat_ids is None:
            raise TorchLoweringError("the ids of x[ids] must be a contiguous tensor")
        shape, ktype = self._out(node)
        gathered_shape = (*ids.shape, *rest)
        out_full = self._new_buffer(node.name, gathered_shape, ktype)
        out = Ref(out_full.buffer, ktype, 0, (ids.numel, width), contiguous_strides((ids.numel, width)))
        k = kernels.embedding(self._kname("gather"), self.aliases, flat_table, flat_ids, out, self.cores)
        what = f"gather of {ids.numel} rows of {list(table.shape)}" + (f" (dim {d} of the source)" if d else "")
        self._add_kernel(k, "gather", [node.name], [out.buffer], f"{node.name}: {what}")
        if not d:
            return out_full
        n_ids = ids.rank  # gathered [ids.., before.., after..] -> [before.., ids.., after..]
        perm = [*range(n_ids, n_ids + d), *range(n_ids), *range(n_ids + d, len(gathered_shape))]
        result = out_full.permute(perm)
        assert result.shape == shape
        return result

    def op_sort(self, node: Any) -> list[Ref]:
        return onehot.sort(self, node)

    def op_histc(self, node: Any) -> Ref:
        return onehot.histc(self, node)

    def op_gather(self, node: Any) -> Ref:
        return onehot.gather(self, node)

    def op_scatter(self, node: Any) -> Ref:
        return onehot.scatter(self, node)

    def op_index_put(self, node: Any) -> Ref:
        return onehot.index_put(self, node)

    def op_index_copy(self, node: Any) -> Ref:
        return onehot.index_copy(self, node)

    def op_grouped_mm_fallback(self, node: Any) -> Ref:
        """transformers' grouped matmul of a mixture-of-experts layer (experts.py)."""
        x, w, offs = (self.ref(a, node) for a in node.args[:3])
        shape, ktype = self._out(node)
        if x.rank != 2 or w.rank != 3 or offs.rank != 1 or x.ktype != w.ktype:
            raise TorchLoweringError("grouped_mm is supported for x [rows, in] and w [experts, in, out] of one type")
        x, offs = self.dense(x, node, [0, 1]), self.dense(offs, node, [0])
        out = self._new_buffer(node.name, shape, ktype)
        k = experts.grouped_matmul(self._kname("experts"), self.aliases, x, w, offs, out, self.cores)
        what = f"{node.name}: grouped matmul of {shape[0]} rows over {w.shape[0]} experts ({w.shape[1]} -> {w.shape[2]})"
        self._add_kernel(k, "experts", [node.name], [out.buffer], what)
        return out

    def op__grouped_mm(self, node: Any) -> Ref:
        """torch._grouped_mm(x, w, offs), which transformers calls instead of grouped_mm_fallback
        where torch has it (bf16): the same product, rows past offs[-1] zero."""
        rest = [*node.args[3:], *node.kwargs.values()]
        if len(node.args) < 3 or node.args[2] is None or any(a is not None for a in rest):
            raise TorchLoweringError("_grouped_mm is supported with row offsets and no bias or output type")
        return self.op_grouped_mm_fallback(node)

    def op_copy(self, node: Any) -> Pending:
        """aten.copy(dst, src): src's values, broadcast to dst's shape, in dst's type."""
        shape, ktype = self._out(node)
        source = _ktype(node.args[1].meta["val"].dtype)
        e = self.expr(node.args[1], shape, node, rows=True)
        if is_int(ktype) and not is_int(source):
            e = Op("to_i64", (e,), ctype="i64")
        elif not is_int(ktype) and is_int(source):
            e = Op("to_f32", (e,))
        return Pending(e, shape, ktype, len(node.users), [node.name])

    def op_slice_scatter(self, node: Any) -> Ref:
        """x with x[.., start:end:step, ..] = src: x copied into a new buffer, then src written over the slice."""
        src, part = node.args[0], node.args[1]
        dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
        shape, ktype = self._out(node)
        dim %= len(shape)
        start = node.args[3] if len(node.args) > 3 else node.kwargs.get("start")
        end = node.args[4] if len(node.args) > 4 else node.kwargs.get("end")
        step = node.args[5] if len(node.args) > 5 else node.kwargs.get("step", 1)
        out = self._new_buffer(node.name, shape, ktype)
        self._materialise(Pending(self.expr(src, shape, node), shape, ktype, 1, [node.name]), node.name, out)
        dest = out.slice(dim, 0 if start is None else start, shape[dim] if end is None else end, step)
        self._materialise(Pending(self.expr(part, dest.shape, node), dest.shape, ktype, 1, [node.name]), node.name, dest)
        return out

    def op_full_like(self, node: Any) -> Ref:
        """A tensor of one value shaped like a computed one: a constant buffer."""
        shape = tuple(node.meta["val"].shape)
        self.consts[node] = torch.full(shape, node.args[1], dtype=node.meta["val"].dtype)
        return self._const_ref(node)

    def op_convolution(self, node: Any) -> Ref:
        """N-d convolution. Mamba's depthwise causal 1-D conv has its own kernel; every other
        (any stride, padding, dilation and groups) is a matrix product: the patches of the padded
        input are a strided view of it (im2col without arithmetic), copied into rows
        [N, G, OH*OW.., Cg*KH*KW..] and multiplied by the weight read as [G, Cg*KH*KW.., Og]; the
        result [N, G, OH*OW.., Og] is returned as the [N, O, OH, OW..] view of it."""
        src, wnode, bnode, stride, padding, dilation, transposed, _, groups = node.args
        in_shape = tuple(src.meta["val"].shape)
        weight = self.ref(wnode, node)
        if transposed:
            raise TorchLoweringError("transposed convolution is not supported")
        # depthwise: one input and one output channel per group (a channel multiplier > 1 is a matmul)
        if (len(in_shape) == 3 and list(stride) == [1] and list(dilation) == [1] and groups == in_shape[1] == weight.shape[0]
                and weight.shape[1] == 1 and groups > 1):
            return self._conv1d_depthwise(node, src, weight, bnode, int(padding[0]))
        shape, ktype = self._out(node)
        if ktype not in ("f16", "bf16", "f32"):
            raise TorchLoweringError(f"convolution of {ktype} is not supported")
        spatial = len(in_shape) - 2
        if len(in_shape) < 3 or len(weight.shape) != spatial + 2:
            raise TorchLoweringError(f"convolution of a {len(in_shape)}-d input is not supported")
        n, c = in_shape[:2]
        o, cg = weight.shape[:2]
        kernel = weight.shape[2:]
        out_sp = shape[2:]
        og = o // groups
        x = self.ref(src, node)
        if any(padding):
            x = self._padded(x, [0, 0, *padding], [0, 0, *padding], node)
        # patches[n, g, oh.., cg, kh..] = x[n, g*cg + cg', oh*s + kh*d ..]
        sn, sc, *ss = x.strides
        patch_shape = (n, groups, *out_sp, cg, *kernel)
        patch_strides = (sn, sc * cg, *(ss[i] * stride[i] for i in range(spatial)), sc, *(ss[i] * dilation[i] for i in range(spatial)))
        patches = Ref(x.buffer, x.ktype, x.offset, patch_shape, patch_strides)
        rows, depth = math.prod(out_sp), cg * math.prod(kernel)
        if patches.reshape((n, groups, rows, depth)) is None:
            patches = self._materialise(Pending(patches, patch_shape, x.ktype, 1, [node.name]), node.name + "_patches")
        lhs = patches.reshape((n, groups, rows, depth))
        assert lhs is not None
        w = weight.reshape((groups, og, depth))
        if w is None:
            w = self._materialise(Pending(weight, weight.shape, weight.ktype, 1, [node.name]), node.name + "_weight").reshape((groups, og, depth))
        assert w is not None
        rhs = w.permute([0, 2, 1]).broadcast_to((n, groups, depth, og))
        bias = None
        if bnode is not None:
            bias = self.ref(bnode, node)
            if groups > 1:  # the product's columns are one group's outputs: add the bias after it
                bias = None
        mm_shape = (n, groups, rows, og)
        out_full = self._new_buffer(node.name, mm_shape, ktype)
        out = Ref(out_full.buffer, ktype, 0, mm_shape, contiguous_strides(mm_shape))
        k = kernels.matmul(self._kname("conv"), self.aliases, self.dense(lhs, node, [2, 3]), rhs, bias, out, self.cores)
        what = f"{spatial}-d convolution as a matmul: {n}x{groups} x ({rows}x{depth} @ {depth}x{og})"
        self._add_kernel(k, "matmul", [node.name], [out.buffer], f"{node.name}: {what}")
        # [n, g, oh.., og] -> [n, g*og, oh..]
        split = out.reshape((n, groups, *out_sp, og))
        assert split is not None
        channels_first = split.permute([0, 1, spatial + 2, *range(2, spatial + 2)])  # [n, g, og, oh..]
        res = channels_first.reshape((n, o, *out_sp))
        if res is None:  # groups > 1 with og > 1: the channel dim spans two strides
            dense = self._materialise(Pending(channels_first, channels_first.shape, ktype, 1, [node.name]), node.name + "_out")
            res = dense.reshape((n, o, *out_sp))
            assert res is not None
        if bnode is not None and groups > 1:
            b = self.ref(bnode, node).reshape((o,) + (1,) * spatial)
            assert b is not None
            summed = Pending(Op("add", (res, b.broadcast_to(res.shape))), res.shape, ktype, 1, [node.name])
            return self._materialise(summed, node.name + "_bias")
        return res

    def _padded(self, x: Ref, low: list[int], high: list[int], node: Any) -> Ref:
        shape = tuple(n + a + b for n, a, b in zip(x.shape, low, high, strict=True))
        out = self._new_buffer(node.name + "_pad", shape, x.ktype)
        k = sequence.pad(self._kname("pad"), self.aliases, x, x.shape, low, high, 0.0, out, self.cores)
        self._add_kernel(k, "pad", [node.name], [out.buffer], f"{node.name}: zero padding {list(x.shape)} to {list(shape)}")
        return out

    def _conv1d_depthwise(self, node: Any, src: Any, weight: Ref, bnode: Any, padding: int) -> Ref:
        """Depthwise 1-D convolution (Mamba's short causal conv): one group per channel, stride 1."""
        in_shape = tuple(src.meta["val"].shape)
        shape, ktype = self._out(node)
        e = self.expr(src, in_shape, node)
        nodes = self._fused_nodes(src, in_shape) + [node.name]
        bias = self.ref(bnode, node) if bnode is not None else None
        out = self._new_buffer(node.name, shape, ktype)
        k = sequence.conv1d_depthwise(self._kname("conv1d"), self.aliases, e, in_shape, weight, bias, padding, out, self.cores)
        comment = f"{', '.join(nodes)}: depthwise conv1d, {in_shape[1]} channels, {weight.shape[-1]} taps, padding {padding}"
        self._add_kernel(k, "conv1d", nodes, [out.buffer], comment)
        return out

    def op_cumsum(self, node: Any) -> Ref:
        src, dim = node.args[0], node.args[1]
        shape, ktype = self._out(node)
        if ktype not in ("f16", "bf16", "f32", "i32", "i64"):
            raise TorchLoweringError(f"cumsum to {ktype} is not supported")
        if not shape:
            return self._materialise(Pending(self.expr(src, shape, node), shape, ktype, 1, [node.name]), node.name)
        dim %= len(shape)
        e = self.expr(src, shape, node)
        nodes = self._fused_nodes(src, shape) + [node.name]
        out = self._new_buffer(node.name, shape, ktype)
        k = sequence.cumsum(self._kname("cumsum"), self.aliases, e, shape, dim, out, self.cores)
        self._add_kernel(k, "cumsum", nodes, [out.buffer], f"{', '.join(nodes)}: cumulative sum over dim {dim} of {list(shape)}")
        return out

    def op_constant_pad_nd(self, node: Any) -> Any:
        src, pads = node.args[0], list(node.args[1])
        fill = float(node.args[2]) if len(node.args) > 2 else 0.0
        shape, ktype = self._out(node)
        rank = len(shape)
        low, high = [0] * rank, [0] * rank
        for i in range(len(pads) // 2):  # pairs from the last dim backwards
            low[rank - 1 - i], high[rank - 1 - i] = pads[2 * i], pads[2 * i + 1]
        value = self.values.get(src)
        if not any(low) and not any(high):  # a copy: the value passes through
            if isinstance(value, Pending) and value.users == 1:
                return Pending(value.expr, value.shape, value.ktype, len(node.users), value.nodes)
            return self.ref(src, node)
        in_shape = tuple(src.meta["val"].shape)
        e = self.expr(src, in_shape, node)
        nodes = self._fused_nodes(src, in_shape) + [node.name]
        if any(p < 0 for p in low + high):  # negative padding crops: read the kept part only
            r = self.ref(src, node)
            for d in range(rank):
                r = r.slice(d, max(-low[d], 0), in_shape[d] - max(-high[d], 0), 1)
            e, in_shape, nodes = r, r.shape, [node.name]
            low, high = [max(p, 0) for p in low], [max(p, 0) for p in high]
        if ktype not in ("f16", "bf16", "f32"):
            raise TorchLoweringError(f"padding {ktype} is not supported")
        out = self._new_buffer(node.name, shape, ktype)
        k = sequence.pad(self._kname("pad"), self.aliases, e, in_shape, low, high, fill, out, self.cores)
        self._add_kernel(k, "pad", nodes, [out.buffer], f"{', '.join(nodes)}: pad {list(in_shape)} to {list(shape)} with {fill}")
        return out

def _contains(tree: Expr, sub: Expr) -> bool:
    if tree is sub or tree == sub:
        return True
    if isinstance(tree, Op):
        return any(_contains(a, sub) for a in tree.args)
    if isinstance(tree, Reduce | Row):
        return _contains(tree.arg, sub)
    return False


def _target_name(node: Any) -> str:
    target = node.target
    packet = getattr(target, "overloadpacket", None)
    if packet is not None:
        return str(packet.__name__)
    return str(getattr(target, "__name__", target))


def partition(ep: Any, cores: int) -> Graph:
    """The kernels and buffers of a decomposed ExportedProgram."""
    return Lowering(ep, cores).run()
