"""Phi simplification, as XLA's PhiGraph::Optimize (xla/service/hlo_phi_graph.cc) does it.

A phi whose inputs, once its references to itself are dropped, are all one node is that node
(`phi(A, A)` and `phi(A, self)` are A). A closure of phis that reaches exactly one non-phi value
through its inputs is that value (a loop-invariant element passed through nested loops). Both
rules run to a fixed point. What is left are genuine merges: a loop's carried elements and the
results of conditionals whose branches differ.
"""
from __future__ import annotations

from collections import deque

from hloscope.analyses.memory.liveness.values import Value


class _Node:
    __slots__ = ("value", "is_phi", "operands", "users", "dead")

    def __init__(self, value: Value) -> None:
        self.value = value
        self.is_phi = value.is_phi
        self.operands: list[_Node] = []
        self.users: list[_Node] = []
        self.dead = False


class PhiGraph:
    """Registers phis with their inputs, simplifies them, and resolves any value to its final."""

    def __init__(self, phis: list[Value]) -> None:
        self._node_of: dict[int, _Node] = {}
        self._members: dict[int, list[int]] = {}
        self._nodes: list[_Node] = []
        self._values: dict[int, Value] = {}
        for phi in phis:
            node = self._node(phi)
            node.operands = [self._node(v) for v in phi.phi_inputs]

    def _node(self, value: Value) -> _Node:
        node = self._node_of.get(value.id)
        if node is None:
            node = _Node(value)
            self._node_of[value.id] = node
            self._members[id(node)] = [value.id]
            self._nodes.append(node)
            self._values[value.id] = value
        return node

    def resolve(self, value: Value) -> Value:
        """The value a (possibly replaced) phi stands for; other values are themselves."""
        if not value.is_phi:
            return value
        node = self._node_of.get(value.id)
        return node.value if node is not None else value

    def optimize(self) -> None:
        for node in self._nodes:
            for operand in node.operands:
                operand.users.append(node)
        changed = True
        while changed:
            changed = self._pass()

    def _pass(self) -> bool:
        changed = False
        checked: set[int] = set()
        for node in self._nodes:
            if not node.is_phi or node.dead:
                continue
            node.operands = [o for o in node.operands if o is not node]
            node.users = [u for u in node.users if u is not node]
            if not node.operands:
                continue
            if all(o is node.operands[0] for o in node.operands):
                self._replace(node, node.operands[0])
                changed = True
                continue
            if id(node) in checked:
                continue
            changed |= self._collapse_closure(node, checked)
        return changed

    def _collapse_closure(self, start: _Node, checked: set[int]) -> bool:
        closure: list[_Node] = []
        seen: set[int] = set()
        worklist = deque([start])
        non_phi: _Node | None = None
        while worklist:
            todo = worklist.popleft()
            if id(todo) in seen:
                continue
            checked.add(id(todo))
            seen.add(id(todo))
            closure.append(todo)
            worklist.extend(todo.operands)
            if not todo.is_phi:
                if non_phi is not None and non_phi is not todo:
                    return False
                non_phi = todo
        if non_phi is None:
            return False
        for node in closure:
            if node.is_phi:
                self._replace(node, non_phi)
        return True

    def _replace(self, node: _Node, replacement: _Node) -> None:
        if node.dead:
            return
        while replacement.dead:
            replacement = self._node_of[replacement.value.id]
        for user in node.users:
            user.operands = [replacement if o is node else o for o in user.operands]
        for operand in node.operands:
            operand.users = [replacement if u is node else u for u in operand.users]
        moved = self._members.pop(id(node), [])
        for value_id in moved:
            self._node_of[value_id] = replacement
        self._members.setdefault(id(replacement), []).extend(moved)
        node.dead = True
