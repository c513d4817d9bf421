#!/usr/bin/python3
"""Writes examples/models/*.json for `p2v step` (issue 15). Standard library only.

Each model is a list of layers in forward order with
  params     parameters of the layer, computed from the architecture (formulas below);
  fwd_flops  forward FLOPs of the layer for the whole per-device batch (2 FLOPs per multiply-add);
  bwd_flops  backward FLOPs = 2 x forward (gradient w.r.t. the input and w.r.t. the weights).
`p2v step` turns FLOPs into time with the system's device numbers: FLOPs / (peak x efficiency).

Formulas (k = kernel size, cin/cout = channels, h x w = output size, B = batch, S = sequence):
  conv (no bias) + batch norm: params = k*k*cin*cout + 2*cout;  MACs = k*k*cin*cout*h*w*B
  conv with bias (VGG):        params = k*k*cin*cout + cout
  linear with bias:            params = in*out + out;           MACs = in*out*tokens
  layer norm:                  params = 2*H
  attention scores and mix (no parameters): MACs = 2*B*S*S*H, charged to the attention layer.
  embedding lookup: params = rows*H, FLOPs ~ 0 (charged nothing).
Run: /usr/bin/python3 scripts/make-models.py  (from the repository root).
"""
import json
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "models")


def layer(name, params, macs):
    f = 2 * macs
    return {"name": name, "params": int(params), "fwd_flops": float(f), "bwd_flops": float(2 * f)}


def resnet50(B=32):
    L = []
    # conv1 7x7, 3->64, stride 2 (224 -> 112), then max pool (-> 56)
    L.append(layer("conv1+bn", 7 * 7 * 3 * 64 + 2 * 64, 7 * 7 * 3 * 64 * 112 * 112 * B))
    cin, hw = 64, 56
    for s, (blocks, w) in enumerate(zip([3, 4, 6, 3], [64, 128, 256, 512])):
        for b in range(blocks):
            stride = 2 if (b == 0 and s > 0) else 1
            out_hw = hw // stride
            p = f"layer{s + 1}.{b}"
            L.append(layer(p + ".conv1+bn", cin * w + 2 * w, cin * w * hw * hw * B))
            L.append(layer(p + ".conv2+bn", 9 * w * w + 2 * w, 9 * w * w * out_hw * out_hw * B))  # v1.5: stride here
            L.append(layer(p + ".conv3+bn", w * 4 * w + 2 * 4 * w, w * 4 * w * out_hw * out_hw * B))
            if b == 0:
                L.append(layer(p + ".downsample+bn", cin * 4 * w + 2 * 4 * w, cin * 4 * w * out_hw * out_hw * B))
            cin, hw = 4 * w, out_hw
    L.append(layer("fc", 2048 * 1000 + 1000, 2048 * 1000 * B))
    return {"name": "resnet50", "batch": B, "input": "224x224 images",
            "source": "He et al., Deep Residual Learning (2016), ResNet-50 v1.5 as in torchvision (25,557,032 parameters)",
            "layers": L}


def vgg16(B=32):
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    L, cin, hw, i = [], 3, 224, 0
    for c in cfg:
        if c == "M":
            hw //= 2
            continue
        i += 1
        L.append(layer(f"conv{i}", 9 * cin * c + c, 9 * cin * c * hw * hw * B))
        cin = c
    for j, (a, b) in enumerate([(512 * 7 * 7, 4096), (4096, 4096), (4096, 1000)]):
        L.append(layer(f"fc{j + 1}", a * b + b, a * b * B))
    return {"name": "vgg16", "batch": B, "input": "224x224 images",
            "source": "Simonyan and Zisserman (2015), VGG-16 configuration D as in torchvision (138,357,544 parameters)",
            "layers": L}


def transformer(name, H, layers, vocab, positions, types, B, S, source, gpt=False):
    T = B * S  # tokens per device
    emb = (vocab + positions + types) * H + (0 if gpt else 2 * H)
    L = [layer("embeddings", emb, 0)]
    for i in range(layers):
        p = f"layer{i}"
        if gpt:  # pre-LN: LN1, QKV, proj, LN2, fc, proj
            L.append(layer(p + ".ln1+attn_qkv", 2 * H + 3 * (H * H + H), 3 * H * H * T + 2 * B * S * S * H))
            L.append(layer(p + ".attn_out", H * H + H, H * H * T))
            L.append(layer(p + ".ln2+mlp_in", 2 * H + 4 * H * H + 4 * H, 4 * H * H * T))
            L.append(layer(p + ".mlp_out", 4 * H * H + H, 4 * H * H * T))
        else:  # post-LN BERT
            L.append(layer(p + ".attn_qkv", 3 * (H * H + H), 3 * H * H * T + 2 * B * S * S * H))
            L.append(layer(p + ".attn_out+ln", H * H + H + 2 * H, H * H * T))
            L.append(layer(p + ".ffn_in", 4 * H * H + 4 * H, 4 * H * H * T))
            L.append(layer(p + ".ffn_out+ln", 4 * H * H + H + 2 * H, 4 * H * H * T))
    if gpt:
        L.append(layer("final_ln+lm_head(tied)", 2 * H, vocab * H * T))
    else:
        L.append(layer("pooler", H * H + H, H * H * B))
    return {"name": name, "batch": B, "input": f"sequences of {S} tokens", "source": source, "layers": L}


MODELS = {
    "resnet50": resnet50(),
    "vgg16": vgg16(),
    "bert-base": transformer("bert-base", 768, 12, 30522, 512, 2, 32, 128,
                             "Devlin et al. (2019), BERT-base uncased: H=768, 12 layers, vocab 30522, 512 positions, 2 types (109,482,240 parameters with pooler, MLM head tied)"),
    "bert-large": transformer("bert-large", 1024, 24, 30522, 512, 2, 8, 128,
                              "Devlin et al. (2019), BERT-large uncased: H=1024, 24 layers, vocab 30522, 512 positions, 2 types (335,141,888 parameters with pooler, MLM head tied)"),
    "gpt-1.3b": transformer("gpt-1.3b", 2048, 24, 50257, 2048, 0, 2, 2048,
                            "Brown et al. (2020), GPT-3 XL shape: d=2048, 24 layers, vocab 50257, 2048 positions, tied output embedding (1,315,723,264 parameters)",
                            gpt=True),
}

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for key, m in MODELS.items():
        m["how"] = ("generated by scripts/make-models.py from the architecture (formulas in its docstring); "
                    "fwd_flops per layer for the per-device batch, bwd_flops = 2 x forward")
        m["grad_dtype"] = "fp32"
        total = sum(l["params"] for l in m["layers"])
        m["total_params"] = total
        order = ["name", "source", "how", "input", "batch", "grad_dtype", "total_params", "layers"]
        m = {k: m[k] for k in order}
        with open(os.path.join(OUT, key + ".json"), "w") as f:
            f.write("{\n")
            items = list(m.items())
            for i, (k, v) in enumerate(items):
                if k == "layers":
                    f.write('  "layers": [\n')
                    f.write(",\n".join("    " + json.dumps(l) for l in v))
                    f.write("\n  ]")
                else:
                    f.write(f"  {json.dumps(k)}: {json.dumps(v)}")
                f.write(",\n" if i + 1 < len(items) else "\n")
            f.write("}\n")
        print(f"{key}: {len(m['layers'])} layers, {total:,} parameters")
