"""The test models, written in plain torch: an MLP, a 2-layer Llama-style decoder (RMSNorm,
rope, GQA attention with a causal mask, SwiGLU), a GPT-2-style block (LayerNorm, GELU,
learned positions) and a BERT-style encoder layer with a padding mask.

Weights are well-conditioned: every Linear's weight uniform with standard deviation
1/sqrt(fan_in) (torch's default bound is 1/sqrt(fan_in), a standard deviation of
1/sqrt(3 fan_in); init_fan_in makes it exactly 1/sqrt(fan_in)), biases small, norms'
weights around 1, embeddings of unit scale."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def init_fan_in(model, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Linear):
                bound = math.sqrt(3.0 / m.in_features)
                m.weight.copy_(torch.empty_like(m.weight).uniform_(-bound, bound, generator=g))
                if m.bias is not None:
                    m.bias.copy_(torch.empty_like(m.bias).uniform_(-0.1, 0.1, generator=g))
            elif isinstance(m, (nn.LayerNorm, nn.RMSNorm)):
                if m.weight is not None:
                    m.weight.copy_(torch.empty_like(m.weight).uniform_(0.8, 1.2, generator=g))
                if getattr(m, "bias", None) is not None:
                    m.bias.copy_(torch.empty_like(m.bias).uniform_(-0.1, 0.1, generator=g))
            elif isinstance(m, nn.Embedding):
                m.weight.copy_(torch.empty_like(m.weight).uniform_(-1, 1, generator=g))
    return model.eval()


class MLP(nn.Module):
    def __init__(self, d=64, h=128, o=32):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc2 = nn.Linear(h, h)
        self.fc3 = nn.Linear(h, o)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.gelu(self.fc1(x)))))


# ---- Llama ----

def rope(x, base=10000.0):
    """Rotary embedding, rotate-half form, positions 0..T-1 of x[B, H, T, D]."""
    t, d = x.shape[-2], x.shape[-1]
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    pos = torch.arange(t, dtype=torch.float32)
    ang = pos[:, None] * inv[None, :]
    cos, sin = torch.cos(ang), torch.sin(ang)
    cos = torch.cat([cos, cos], dim=-1).to(x.dtype)
    sin = torch.cat([sin, sin], dim=-1).to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    rot = torch.cat([-x2, x1], dim=-1)
    return x * cos + rot * sin


class LlamaAttention(nn.Module):
    def __init__(self, d, n_heads, n_kv):
        super().__init__()
        self.h, self.kv, self.hd = n_heads, n_kv, d // n_heads
        self.q = nn.Linear(d, n_heads * self.hd, bias=False)
        self.k = nn.Linear(d, n_kv * self.hd, bias=False)
        self.v = nn.Linear(d, n_kv * self.hd, bias=False)
        self.o = nn.Linear(n_heads * self.hd, d, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.h, self.hd).transpose(1, 2)
        k = self.k(x).view(b, t, self.kv, self.hd).transpose(1, 2)
        v = self.v(x).view(b, t, self.kv, self.hd).transpose(1, 2)
        q, k = rope(q), rope(k)
        rep = self.h // self.kv
        k = k[:, :, None, :, :].expand(b, self.kv, rep, t, self.hd).reshape(b, self.h, t, self.hd)
        v = v[:, :, None, :, :].expand(b, self.kv, rep, t, self.hd).reshape(b, self.h, t, self.hd)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.hd)
        mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        att = torch.softmax(att + mask, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, self.h * self.hd)
        return self.o(y)


class SwiGLU(nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.gate = nn.Linear(d, f, bias=False)
        self.up = nn.Linear(d, f, bias=False)
        self.down = nn.Linear(f, d, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class LlamaLayer(nn.Module):
    def __init__(self, d, n_heads, n_kv, f):
        super().__init__()
        self.n1 = nn.RMSNorm(d, eps=1e-5)
        self.att = LlamaAttention(d, n_heads, n_kv)
        self.n2 = nn.RMSNorm(d, eps=1e-5)
        self.mlp = SwiGLU(d, f)

    def forward(self, x):
        x = x + self.att(self.n1(x))
        return x + self.mlp(self.n2(x))


class Llama(nn.Module):
    """A 2-layer Llama-style decoder: token ids in, logits out."""

    def __init__(self, vocab=96, d=64, n_heads=4, n_kv=2, f=128, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(LlamaLayer(d, n_heads, n_kv, f) for _ in range(layers))
        self.norm = nn.RMSNorm(d, eps=1e-5)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.emb(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


# ---- GPT-2 ----

class GPT2Block(nn.Module):
    """A GPT-2-style model of one block: token and learned position embeddings, pre-LN
    causal attention (SDPA), a GELU MLP, the final LayerNorm and the tied head."""

    def __init__(self, vocab=80, d=64, n_heads=4, max_pos=64):
        super().__init__()
        self.h = n_heads
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(max_pos, d)
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.lnf = nn.LayerNorm(d)

    def forward(self, ids):
        b, t = ids.shape
        pos = torch.arange(t)
        x = self.wte(ids) + self.wpe(pos)[None]
        q, k, v = self.qkv(self.ln1(x)).split(x.shape[-1], dim=-1)
        hd = x.shape[-1] // self.h
        q = q.view(b, t, self.h, hd).transpose(1, 2)
        k = k.view(b, t, self.h, hd).transpose(1, 2)
        v = v.view(b, t, self.h, hd).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, -1))
        x = x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return self.lnf(x) @ self.wte.weight.t()


# ---- BERT ----

class BertLayer(nn.Module):
    """A BERT-style encoder layer (post-LN) with a padding mask: x[B, T, d] and
    mask[B, T] (1 = a token, 0 = padding) in."""

    def __init__(self, d=64, n_heads=4, f=128):
        super().__init__()
        self.h = n_heads
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.fc1 = nn.Linear(d, f)
        self.fc2 = nn.Linear(f, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x, mask):
        b, t, d = x.shape
        hd = d // self.h
        q = self.q(x).view(b, t, self.h, hd).permute(0, 2, 1, 3)
        k = self.k(x).view(b, t, self.h, hd).permute(0, 2, 1, 3)
        v = self.v(x).view(b, t, self.h, hd).permute(0, 2, 1, 3)
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd)
        pad = (mask == 0)[:, None, None, :]
        s = s.masked_fill(pad, float("-inf"))
        p = F.softmax(s, dim=-1)
        a = torch.matmul(p, v).permute(0, 2, 1, 3).reshape(b, t, d)
        x = self.ln1(x + self.o(a))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))
