"""The transformer workload's configuration and its closed-form parameter count (no jax here).

One decoder-only transformer, in two styles chosen field by field:

- GPT-2 style (the defaults): learned token and position embeddings, pre-LayerNorm blocks of
  causal multi-head attention with a fused QKV projection and a GELU MLP, biases everywhere, a
  final LayerNorm, and an unembedding tied to the token embedding. With `d_ff = 4 * d_model` its
  parameter count is the closed form

      N = h*v + L*(12h^2 + 13h) + 2h + s*h

  (h = d_model, v = vocab, L = n_layers, s = seq_len): per block 4h^2 + 4h for attention, 8h^2 +
  5h for the MLP, 4h for two LayerNorms.
- Llama style: RMSNorm, separate Q/K/V projections with grouped-query attention (`n_kv_heads`
  key/value heads), rotary positions, a SwiGLU MLP (gate, up, down), no biases, and an untied
  unembedding (Llama 3.2 1B ties it).

Program options live here too, because they change the compiled program: `scan_layers`, the
remat policy (`remat`, with `remat_block` for a nested "checkpointing scan" and `remat_layers` for
partial remat of the first N layers) and the sharding (`tensor_parallel`, `fsdp`, and for a
multislice mesh `dcn_data_parallel` / `ici_fsdp_parallel`: `hloscope.configs.mesh`).

Memory-efficient options (what a run at scale uses; fields in their own block of the class):

- `attention`: `plain` materialises the [batch, heads, seq, seq] scores; `blockwise` is
  flash-style attention in pure JAX (online softmax over key blocks of `attention_kv_block`
  tokens for query blocks of `attention_q_block`, fully-future blocks skipped, a backward that
  recomputes each block's scores from the saved log-sum-exp), so it compiles for every target;
  `splash` is JAX's Pallas TPU kernel (`splash_attention`), TPU only.
- `loss`: `plain` materialises the [batch, seq, vocab] logits; `blockwise` scans over chunks of
  `loss_chunk` positions, each chunk's logits recomputed in the backward pass.
- `micro_batches` K: gradient accumulation, a scan over K micro-batches of the global batch
  (fp32 gradient sums, one optimizer update); K must divide each data-parallel shard's batch.

`optimizer_offload` (MaxText's `optimizer_memory_host_offload`): the fp32 master weights and
AdamW moments live in pinned host memory between steps; the step moves them to the device for
the update and back (`workloads/transformer.py`). Off by default, and left out of `to_dict`
when off, so configs without it hash as before.

Defaults. The fields default to the plain program (plain attention, plain loss, one
micro-batch), and so do the `tiny`, `gpt2-small` and `llama-1b` presets: the committed fixtures
(fixtures/make_fixtures.py, from `tiny`) and the tests that compare live compiles with them stay
valid, and the small presets are where the plain program is the one worth reading. The at-scale
presets (`llama-8b`, `llama-70b`) default to blockwise attention and the blockwise loss, as the
runs they model do: MaxText's default attention is `flash` (the Pallas splash kernel on TPU) and
Levanter's is splash on TPU and its blockwise JAX flash attention elsewhere; at a 128k
vocabulary the full logits of a few 4096-token sequences are several GiB per device, which
those runs avoid with a blockwise loss (Levanter's `cross_entropy_block_size`, MaxText's
`num_vocab_tiling`). The at-scale default is the pure-JAX `blockwise` rather than `splash` so a
preset compiles for every target; XLA's cost analysis also counts a Pallas custom call as 0
FLOPs. Block sizes left unset are `gcd(DEFAULT, seq_len)`: the default when it divides the
sequence, the sequence when it is shorter (and a divisor), a common divisor otherwise, so a
sweep over sequence lengths never needs them; set ones must divide `seq_len`.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from hloscope.configs.tensors import NAMED_PREFIX, block_names, decode_named, encode_named
from hloscope.errors import UsageError

REMAT_POLICIES = ("none", "full", "nothing_saveable", "dots_saveable",
                  "dots_with_no_batch_dims_saveable", "save_named", "offload_named")
"""`full` is `jax.checkpoint` with its default policy; the others name `jax.checkpoint_policies`
(`save_named` / `offload_named`: save_only_these_names / save_and_offload_only_these_names of
SAVED_NAMES)."""
SAVED_NAMES = ("qkv", "attn_out", "mlp_hidden")
"""The `checkpoint_name`s the block gives its activations (Q/K/V projections, attention output
before the output projection, the MLP's hidden activation)."""

# --- remat families that rely on the built-in block's own names (issue 16, deliverable 4) ---
LAYER_INPUT = "layer_input"
"""The name the built-in layers give a block's input (the layer scan's carry) under the carry
offload policies: what `offload_carries` moves to pinned host memory."""
LAYER_PARAMS = "layer_params"
"""The name of a block's parameters (the layer scan's per-layer input) under `offload_scan`."""
NORM_NAMES = ("norm1", "norm2")
"""The `checkpoint_name`s of the block's two norm outputs (before attention, before the MLP)."""
CARRY_OFFLOAD_POLICIES = ("offload_carries", "offload_scan")
"""Full remat of each block with its input offloaded to pinned host memory; `offload_scan`
(Levanter's `offload`) offloads the scan's per-layer inputs (the block's parameters) too."""
RECOMPUTE_LEVELS = {1: ("mlp_hidden",), 2: ("mlp_hidden", *NORM_NAMES)}
"""llm.c's `-r` levels: the named activations each recomputes in the backward pass (1: the MLP
activation; 2: it and both norm outputs)."""
RECOMPUTE_POLICIES = tuple(f"recompute:{level}" for level in RECOMPUTE_LEVELS)
BLOCK_REMAT_POLICIES = (*CARRY_OFFLOAD_POLICIES, *RECOMPUTE_POLICIES)
"""Policies defined on the built-in block's names (not usable on an arbitrary function)."""
# --- end of the block-name remat families ---

ATTENTIONS = ("plain", "blockwise", "splash")
LOSSES = ("plain", "blockwise")
DEFAULT_ATTENTION_BLOCK = 512  # query and key block (tokens) when unset
DEFAULT_LOSS_CHUNK = 1024  # positions per loss chunk when unset
DTYPES = ("float32", "bfloat16", "float16")
NORMS = ("layernorm", "rmsnorm")
ACTIVATIONS = ("gelu", "swiglu")
POSITIONS = ("learned", "rotary")


@dataclass(frozen=True)
class AdamWConfig:
    """Hand-written AdamW: fp32 master weights and moments, decoupled weight decay."""

    learning_rate: float = 3e-4
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    weight_decay: float = 0.1


_OPTIONAL_WHEN_UNSET = ("dcn_data_parallel", "ici_fsdp_parallel")
_OPTIONAL_WHEN_FALSE = ("optimizer_offload",)


@dataclass(frozen=True)
class TransformerConfig:
    """Shapes, dtypes and program options of one train step (batch is the global batch)."""

    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 512
    vocab: int = 512
    seq_len: int = 64
    batch: int = 8
    param_dtype: str = "bfloat16"
    compute_dtype: str = "bfloat16"
    scan_layers: bool = False
    remat: str = "none"
    optimizer: AdamWConfig = AdamWConfig()
    n_kv_heads: int | None = None  # None: as many as n_heads (multi-head attention)
    norm: str = "layernorm"
    activation: str = "gelu"
    positions: str = "learned"
    tie_embeddings: bool = True
    biases: bool = True
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    remat_block: int = 0  # > 0: nested scan remat, scan(remat(scan(remat(block)))) of this size
    remat_layers: int | None = None  # partial remat: only the first N layers; None = all
    tensor_parallel: int = 1  # size of the "tensor" mesh axis; "data" gets the other devices
    fsdp: bool = False  # shard parameters and optimizer state over the "data" axis
    # --- the multislice mesh: MaxText's dcn_*/ici_* parallelism (hloscope.configs.mesh) ---
    # Either one stated (or a target of several slices) gives the hybrid (data, fsdp, tensor)
    # mesh: data parallelism across slices over DCN, FSDP and tensor parallelism over ICI.
    dcn_data_parallel: int | None = None  # ways across slices; None: one per slice
    ici_fsdp_parallel: int | None = None  # FSDP ways inside a slice; None: all it can (fsdp) or 1
    # Memory-efficient model options (see the module docstring for the defaults' reasons).
    attention: str = "plain"  # plain | blockwise | splash
    attention_q_block: int | None = None  # None: gcd(DEFAULT_ATTENTION_BLOCK, seq_len)
    attention_kv_block: int | None = None  # None: gcd(DEFAULT_ATTENTION_BLOCK, seq_len)
    loss: str = "plain"  # plain | blockwise
    loss_chunk: int | None = None  # None: gcd(DEFAULT_LOSS_CHUNK, seq_len)
    micro_batches: int = 1  # gradient accumulation steps per optimizer update
    optimizer_offload: bool = False  # fp32 master and AdamW moments in pinned host memory

    def __post_init__(self) -> None:
        if not self.remat.startswith(NAMED_PREFIX):
            _check_choice("remat", self.remat, (*REMAT_POLICIES, *BLOCK_REMAT_POLICIES))
        for dtype in (self.param_dtype, self.compute_dtype):
            _check_choice("dtype", dtype, DTYPES)
        _check_choice("norm", self.norm, NORMS)
        _check_choice("activation", self.activation, ACTIVATIONS)
        _check_choice("positions", self.positions, POSITIONS)
        sizes = (self.d_model, self.n_layers, self.n_heads, self.d_ff, self.vocab, self.seq_len,
                 self.batch, self.kv_heads, self.tensor_parallel)
        if min(sizes) < 1:
            raise UsageError("every size of a transformer config must be positive")
        self._check_heads()
        self._check_remat_options()
        self._check_mesh_options()
        self._check_memory_options()

    def _check_heads(self) -> None:
        if self.d_model % self.n_heads:
            raise UsageError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if self.n_heads % self.kv_heads:
            raise UsageError(f"n_heads {self.n_heads} is not a multiple of n_kv_heads "
                             f"{self.kv_heads}")
        if self.positions == "rotary" and self.head_dim % 2:
            raise UsageError(f"rotary positions need an even head dimension, not {self.head_dim}")

    def _check_remat_options(self) -> None:
        if self.remat.startswith(NAMED_PREFIX):
            self._check_named_policy()
        if self.remat_block:
            if not self.scan_layers:
                raise UsageError("nested scan remat (remat_block) needs scan_layers")
            if self.remat_block < 1 or self.n_layers % self.remat_block:
                raise UsageError(f"remat block {self.remat_block} does not divide "
                                 f"{self.n_layers} layers")
        if self.remat_layers is not None and not 0 <= self.remat_layers <= self.n_layers:
            raise UsageError(f"cannot remat {self.remat_layers} of {self.n_layers} layers")
        if self.remat == "none" and (self.remat_block or self.remat_layers is not None):
            raise UsageError("remat_block and remat_layers need a remat policy other than none")
        if self.remat_block and self.remat_layers is not None:
            raise UsageError("nested scan remat and partial remat cannot be combined")
        if self.remat == "offload_scan" and not self.scan_layers:
            raise UsageError("offload_scan offloads the layer scan's inputs: it needs scan_layers")

    def _check_named_policy(self) -> None:
        """A per-tensor policy (`names:...`) names this block's tensors, in its stored form."""
        names = block_names(self)
        stored = encode_named(decode_named(self.remat, names), names)
        if stored != self.remat:
            raise UsageError(f"per-tensor policy {self.remat!r} is not in its stored form "
                             f"{stored!r} (hloscope.configs.policies writes it)")

    def _check_mesh_options(self) -> None:
        for name in ("dcn_data_parallel", "ici_fsdp_parallel"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UsageError(f"{name} must be positive, not {value}")

    def _check_memory_options(self) -> None:
        _check_choice("attention", self.attention, ATTENTIONS)
        _check_choice("loss", self.loss, LOSSES)
        for name in ("attention_q_block", "attention_kv_block", "loss_chunk"):
            size = getattr(self, name)
            if size is not None and (size < 1 or self.seq_len % size):
                raise UsageError(f"{name} {size} does not divide the sequence length "
                                 f"{self.seq_len}")
        if self.micro_batches < 1 or self.batch % self.micro_batches:
            raise UsageError(f"{self.micro_batches} micro-batches do not divide the batch "
                             f"{self.batch}; divisors: {_divisors_text(self.batch)}")

    def check_placement(self, backend: str, data_shards: int) -> None:
        """UsageError for options the target cannot take: splash attention off TPU, or
        `micro_batches` not dividing the batch of each of `data_shards` data-parallel shards
        (micro-batches are split over the same devices as the batch)."""
        if self.attention == "splash" and backend != "tpu":
            raise UsageError(f"splash attention is a TPU kernel; for {backend} use "
                             "--attention blockwise")
        if data_shards < 1 or self.batch % data_shards:
            return  # the batch does not split at all: said where the batch is checked
        local = self.batch // data_shards
        if local % self.micro_batches:
            raise UsageError(
                f"{self.micro_batches} micro-batches do not divide the {local} sequences of "
                f"each of the {data_shards} data-parallel shards (batch {self.batch}); valid "
                f"--micro-batches: {_divisors_text(local)}")

    @property
    def q_block(self) -> int:
        """Query block of blockwise and splash attention (tokens)."""
        return self.attention_q_block or math.gcd(DEFAULT_ATTENTION_BLOCK, self.seq_len)

    @property
    def kv_block(self) -> int:
        """Key/value block of blockwise and splash attention (tokens)."""
        return self.attention_kv_block or math.gcd(DEFAULT_ATTENTION_BLOCK, self.seq_len)

    @property
    def loss_chunk_size(self) -> int:
        """Positions per chunk of the blockwise loss."""
        return self.loss_chunk or math.gcd(DEFAULT_LOSS_CHUNK, self.seq_len)

    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def rematted_layers(self) -> int:
        """How many layers run under jax.checkpoint."""
        if self.remat == "none":
            return 0
        return self.n_layers if self.remat_layers is None else self.remat_layers

    @property
    def tokens(self) -> int:
        """Tokens per step (global batch x sequence length)."""
        return self.batch * self.seq_len

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON; mesh options left unstated (and `optimizer_offload` when off)
        are left out, so such a config reads (and hashes) as it did before they existed."""
        data = asdict(self)
        for name in _OPTIONAL_WHEN_UNSET:
            if data[name] is None:
                del data[name]
        for name in _OPTIONAL_WHEN_FALSE:
            if not data[name]:
                del data[name]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TransformerConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UsageError(f"unknown transformer config keys: {', '.join(unknown)}")
        values = dict(data)
        if isinstance(values.get("optimizer"), dict):
            values["optimizer"] = AdamWConfig(**values["optimizer"])
        return cls(**values)


def _check_choice(what: str, value: str, known: tuple[str, ...]) -> None:
    if value not in known:
        raise UsageError(f"unknown {what} {value!r}; known: {', '.join(known)}")


def _divisors_text(n: int) -> str:
    return ", ".join(str(d) for d in range(1, n + 1) if n % d == 0)


def norm_param_count(config: TransformerConfig) -> int:
    """One normalisation layer: a scale, plus a bias for LayerNorm."""
    return config.d_model * (2 if config.norm == "layernorm" else 1)


def attention_param_count(config: TransformerConfig) -> int:
    """Q and output projections h x h, K and V h x (kv_heads * head_dim), optional biases."""
    h, kv = config.d_model, config.kv_heads * config.head_dim
    weights = 2 * h * h + 2 * h * kv
    return weights + (2 * h + 2 * kv if config.biases else 0)


def mlp_param_count(config: TransformerConfig) -> int:
    """GELU: fc h x f and proj f x h; SwiGLU: gate, up and down; optional biases."""
    h, f = config.d_model, config.d_ff
    if config.activation == "swiglu":
        return 3 * h * f + (2 * f + h if config.biases else 0)
    return 2 * h * f + (f + h if config.biases else 0)


def block_param_count_of(config: TransformerConfig) -> int:
    """Parameters of one block: attention, MLP and two norms."""
    return attention_param_count(config) + mlp_param_count(config) + 2 * norm_param_count(config)


def embedding_param_count(config: TransformerConfig) -> int:
    """Token embedding, the learned position table, and the unembedding when it is untied."""
    h = config.d_model
    count = config.vocab * h
    if config.positions == "learned":
        count += config.seq_len * h
    if not config.tie_embeddings:
        count += config.vocab * h
    return count


def param_count(config: TransformerConfig) -> int:
    """Parameters of the model, for either style and any d_ff."""
    blocks = config.n_layers * block_param_count_of(config)
    return embedding_param_count(config) + blocks + norm_param_count(config)


def closed_form_param_count(d_model: int, vocab: int, n_layers: int, seq_len: int) -> int:
    """N = h*v + L*(12h^2 + 13h) + 2h + s*h, the GPT count when d_ff = 4h."""
    h = d_model
    return h * vocab + n_layers * (12 * h * h + 13 * h) + 2 * h + seq_len * h
