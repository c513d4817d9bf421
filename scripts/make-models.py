#!/usr/bin/python3
"""Writes examples/models/*.json for `p2v step` (docs/step.md). Standard library only.

Each model is a list of layers in forward order with
  params     parameters of the layer, computed from the architecture (formulas below);
  fwd_flops  forward FLOPs of the layer for the whole per-device batch (2 FLOPs per multiply-add);
  bwd_flops  backward FLOPs = 2 x forward (gradient w.r.t. the input and w.r.t. the weights).
`p2v step` turns FLOPs into time with the system's device numbers: FLOPs / (peak x efficiency), or
fits one speed to a measured step time (--measured-step-ms, or --throughput ID: an entry of the
model's "throughput" list, published numbers with their sources, THROUGHPUT below).

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

# Published training throughputs (`p2v step --throughput ID` fits the compute speed to one).
# samples_per_s is over all `gpus`; batch is per GPU. Every entry names where it is published.
DLE = "NVIDIA/DeepLearningExamples @ 729963dd47e7c8bd462ad10bfac7a7b0b604e6dd, "
DLE_RN50 = (DLE + "PyTorch/Classification/ConvNets/resnet50v1.5/README.md, Training performance results "
            "(pytorch-21.03 NGC container); batch per GPU from PyTorch/Classification/ConvNets/configs.yml")
DLE_BERT = (DLE + "PyTorch/LanguageModeling/BERT/README.md, Training performance results, Pre-training "
            "(pytorch:21.11-py3 NGC container), sequence length 128")
OCI = ("oracle-japan/ocitutorials @ 26a5670b980a368f383c0fff4c06ed7c4dccf672, "
       "tutorials/_intermediates/spinup-gpu-cluster.md, section 3-3-1 (Horovod sample program)")


def tp(id, device, precision, framework, batch, gpus, samples_per_s, source, note=None):
    t = {"id": id, "device": device, "precision": precision, "framework": framework, "batch": batch,
         "gpus": gpus, "samples_per_s": samples_per_s, "source": source}
    if note:
        t["note"] = note
    return t


RN50_DLE = "PyTorch DDP, DeepLearningExamples resnet50v1.5, --mode benchmark_training"
HVD = ("Horovod tensorflow2_synthetic_benchmark.py (Keras ResNet50 v1, synthetic data, fp32 = TF32 on A100), "
       "horovod/horovod:latest image")
HVD_NOTE = ("OCI BM.GPU4.8 nodes: 8x A100-SXM4-40GB on NVSwitch, 16x 100 Gb/s RoCE v2 per node; the same "
            "tutorial's nccl-tests all_reduce_perf at 10 GiB: busbw 235.6 GB/s in one node, 172.1 GB/s over two; "
            "an earlier version of the file gave 600.0 (8 GPUs) and 573.2 (16 GPUs) img/s per GPU")
BERT_DLE = "PyTorch, DeepLearningExamples BERT run_pretraining.sh (LAMB, gradient accumulation)"
BERT_NOTE = ("phase 1 pre-training with gradient accumulation: gradients are all-reduced once per {} "
             "micro-batches, so the step time is almost pure compute")
THROUGHPUT = {
    "resnet50": [
        tp("dle-a100-tf32-1gpu", "A100-SXM4-80GB", "tf32", RN50_DLE, 256, 1, 938, DLE_RN50),
        tp("dle-a100-tf32-8gpu", "A100-SXM4-80GB", "tf32", RN50_DLE, 256, 8, 7248, DLE_RN50),
        tp("dle-a100-amp-1gpu", "A100-SXM4-80GB", "amp", RN50_DLE, 256, 1, 2470, DLE_RN50),
        tp("dle-a100-amp-8gpu", "A100-SXM4-80GB", "amp", RN50_DLE, 256, 8, 16621, DLE_RN50),
        tp("dle-v100-fp32-1gpu", "V100-SXM2-16GB", "fp32", RN50_DLE, 112, 1, 367, DLE_RN50),
        tp("dle-v100-fp32-8gpu", "V100-SXM2-16GB", "fp32", RN50_DLE, 112, 8, 2855, DLE_RN50),
        tp("dle-v100-amp-1gpu", "V100-SXM2-16GB", "amp", RN50_DLE, 256, 1, 1200, DLE_RN50),
        tp("dle-v100-amp-8gpu", "V100-SXM2-16GB", "amp", RN50_DLE, 256, 8, 8322, DLE_RN50),
        tp("horovod-oci-a100-8gpu", "A100-SXM4-40GB", "tf32", HVD, 32, 8, 8 * 600.2, OCI, HVD_NOTE),
        tp("horovod-oci-a100-16gpu", "A100-SXM4-40GB", "tf32", HVD + ", 2 nodes", 32, 16, 16 * 580.0, OCI,
           HVD_NOTE),
    ],
    "bert-large": [
        tp("dle-a100-tf32-1gpu", "A100-SXM4-80GB", "tf32", BERT_DLE, 128, 1, 317, DLE_BERT, BERT_NOTE.format(64)),
        tp("dle-a100-tf32-8gpu", "A100-SXM4-80GB", "tf32", BERT_DLE, 128, 8, 2505, DLE_BERT, BERT_NOTE.format(64)),
        tp("dle-a100-tf32-16gpu", "A100-SXM4-80GB", "tf32", BERT_DLE + ", 2 DGX A100", 128, 16, 4979, DLE_BERT,
           BERT_NOTE.format(32) + "; Multi-node Scaling table, whose batch column reads 126 for TF32"),
        tp("dle-a100-amp-1gpu", "A100-SXM4-80GB", "amp", BERT_DLE, 256, 1, 580, DLE_BERT, BERT_NOTE.format(32)),
        tp("dle-a100-amp-8gpu", "A100-SXM4-80GB", "amp", BERT_DLE, 256, 8, 4591, DLE_BERT, BERT_NOTE.format(32)),
    ],
}

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for key, m in MODELS.items():
        m["how"] = ("generated by scripts/make-models.py from the architecture (formulas in its docstring); "
                    "fwd_flops per layer for the per-device batch, bwd_flops = 2 x forward")
        m["grad_dtype"] = "fp32"
        total = sum(l["params"] for l in m["layers"])
        m["total_params"] = total
        order = ["name", "source", "how", "input", "batch", "grad_dtype", "total_params", "throughput", "layers"]
        if key in THROUGHPUT:
            m["throughput"] = THROUGHPUT[key]
        m = {k: m[k] for k in order if k in m}
        with open(os.path.join(OUT, key + ".json"), "w") as f:
            f.write("{\n")
            items = list(m.items())
            for i, (k, v) in enumerate(items):
                if k in ("layers", "throughput"):
                    f.write(f'  "{k}": [\n')
                    f.write(",\n".join("    " + json.dumps(l) for l in v))
                    f.write("\n  ]")
                else:
                    f.write(f"  {json.dumps(k)}: {json.dumps(v)}")
                f.write(",\n" if i + 1 < len(items) else "\n")
            f.write("}\n")
        print(f"{key}: {len(m['layers'])} layers, {total:,} parameters")
