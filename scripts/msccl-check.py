#!/usr/bin/env python3
"""Checks an MSCCL algorithm file (as `p2v export --format msccl` writes it), in three parts.

1. Structure: every attribute MSCCL's executor reads (Azure/msccl-executor-nccl @ 3b40a2a,
   src/misc/msccl/msccl_parser.cc, mscclGetAlgoFromXmlFile) is present and in range: thread block
   ids 0..T-1 per rank, peers other than the rank, channels below 32, steps numbered 0..S-1 and at
   most 256 per thread block, cnt in 1..71, offsets inside the declared buffers, dependencies that
   name an existing earlier-numbered step of another thread block, which carries hasdep="1".
2. Execution: the file is run as the executor runs it (each thread block executes its steps in
   order; a step waits for its dependency; sends go into a FIFO per (sender, receiver, channel),
   receives take from it) with symbolic data: chunk c of rank r starts as "rank r's contribution".
   A deadlock, a receive whose size differs from the matching send, or a message left unread is an
   error. At the end every chunk of every rank must hold every rank's contribution exactly once.
3. With --msccl-tools DIR (a checkout of github.com/microsoft/msccl-tools): the same execution is
   replayed as an MSCCLang program (msccl.language: chunk().copy / .reduce, every message staged
   in the sender's scratch buffer so it carries the value it had when sent), and msccl-tools' own
   AllReduce postcondition (msccl.language.collectives.AllReduce.check) decides. msccl-tools has
   no reader for this XML; this is its own semantics applied to the file's data flow.

Exit 0: all checks passed; 1: a check failed; 2: usage error. Needs Python 3.8+; part 3 also
needs lxml (Debian: python3-lxml), which msccl-tools imports.
"""
import argparse
import collections
import sys
import types
import xml.etree.ElementTree as ET

MAX_STEPS = 256  # MSCCL_MAX_NUM_STEPS
MAX_COUNT = 72  # MSCCL_MAX_COUNT (cnt must be below it)
MAX_CHANNELS = 32  # MAXCHANNELS
SEND = {"s", "rcs", "rrs", "rrcs"}
RECV = {"r", "rcs", "rrs", "rrc", "rrcs"}
TYPES = SEND | RECV | {"cpy", "re", "nop"}


class Bad(Exception):
    pass


def ints(node, *names):
    out = []
    for n in names:
        v = node.get(n)
        if v is None:
            raise Bad(f"<{node.tag}> lacks attribute '{n}'")
        try:
            out.append(int(v))
        except ValueError:
            raise Bad(f"<{node.tag}> attribute {n}='{v}' is not an integer")
    return out


def load(path):
    root = ET.parse(path).getroot()
    if root.tag != "algo":
        raise Bad(f"top element is <{root.tag}>, not <algo>")
    for a in ("name", "proto", "coll"):
        if root.get(a) is None:
            raise Bad(f"<algo> lacks attribute '{a}'")
    nchan, nchunks, ngpus, inplace, outofplace = ints(root, "nchannels", "nchunksperloop", "ngpus", "inplace",
                                                      "outofplace")
    ints(root, "minBytes", "maxBytes")
    if root.get("proto") not in ("Simple", "LL", "LL128"):
        raise Bad(f"proto '{root.get('proto')}' is not Simple, LL or LL128")
    if root.get("coll") != "allreduce":
        raise Bad(f"coll '{root.get('coll')}': this checker knows allreduce only")
    if inplace != 1:
        raise Bad("inplace must be 1 (the checker runs the in-place AllReduce)")
    gpus = {}
    for g in root.findall("gpu"):
        gid, ic, oc, sc = ints(g, "id", "i_chunks", "o_chunks", "s_chunks")
        if gid in gpus or not 0 <= gid < ngpus:
            raise Bad(f"gpu id {gid}: duplicate or outside 0..{ngpus - 1}")
        if ic < nchunks:
            raise Bad(f"gpu {gid}: i_chunks {ic} < nchunksperloop {nchunks}")
        sizes = {"i": ic, "o": oc, "s": sc}
        tbs = {}
        for tb in g.findall("tb"):
            bid, send, recv, chan = ints(tb, "id", "send", "recv", "chan")
            if bid in tbs:
                raise Bad(f"gpu {gid}: duplicate thread block id {bid}")
            if send == gid or recv == gid or not -1 <= send < ngpus or not -1 <= recv < ngpus:
                raise Bad(f"gpu {gid} tb {bid}: bad peers send={send} recv={recv}")
            if not 0 <= chan < min(nchan, MAX_CHANNELS):
                raise Bad(f"gpu {gid} tb {bid}: channel {chan} outside 0..{min(nchan, MAX_CHANNELS) - 1}")
            ops = []
            for i, st in enumerate(tb.findall("step")):
                s, so, do, cnt, depid, deps, hasdep = ints(st, "s", "srcoff", "dstoff", "cnt", "depid", "deps",
                                                           "hasdep")
                typ, sb, db = st.get("type"), st.get("srcbuf"), st.get("dstbuf")
                if s != i:
                    raise Bad(f"gpu {gid} tb {bid}: step numbered {s} at position {i}")
                if typ not in TYPES:
                    raise Bad(f"gpu {gid} tb {bid} step {s}: unknown type '{typ}'")
                if typ != "nop" and not 0 < cnt < MAX_COUNT:
                    raise Bad(f"gpu {gid} tb {bid} step {s}: cnt {cnt} outside 1..{MAX_COUNT - 1}")
                if typ in SEND and send < 0 or typ in RECV and recv < 0:
                    raise Bad(f"gpu {gid} tb {bid} step {s}: '{typ}' without a peer")
                for buf, off in ((sb, so), (db, do)):
                    if buf not in sizes:
                        raise Bad(f"gpu {gid} tb {bid} step {s}: buffer '{buf}'")
                    if typ != "nop" and not 0 <= off <= sizes[buf] - cnt:
                        raise Bad(f"gpu {gid} tb {bid} step {s}: offset {off}+{cnt} outside buffer '{buf}'")
                if hasdep not in (0, 1):
                    raise Bad(f"gpu {gid} tb {bid} step {s}: hasdep {hasdep}")
                ops.append(dict(type=typ, sb=sb, so=so, db=db, do=do, cnt=cnt, depid=depid, deps=deps,
                                hasdep=hasdep))
            if len(ops) > MAX_STEPS:
                raise Bad(f"gpu {gid} tb {bid}: {len(ops)} steps > {MAX_STEPS}")
            tbs[bid] = dict(send=send, recv=recv, chan=chan, ops=ops)
        if sorted(tbs) != list(range(len(tbs))):
            raise Bad(f"gpu {gid}: thread block ids {sorted(tbs)} are not 0..{len(tbs) - 1}")
        gpus[gid] = dict(tbs=tbs, sizes=sizes)
    if sorted(gpus) != list(range(ngpus)):
        raise Bad(f"gpus {sorted(gpus)} are not 0..{ngpus - 1}")
    for gid, g in gpus.items():
        for bid, tb in g["tbs"].items():
            for i, op in enumerate(tb["ops"]):
                if op["depid"] >= 0:
                    dt = g["tbs"].get(op["depid"])
                    if dt is None or op["depid"] == bid or not 0 <= op["deps"] < len(dt["ops"]):
                        raise Bad(f"gpu {gid} tb {bid} step {i}: dependency ({op['depid']},{op['deps']}) names no "
                                  f"step of another thread block")
                    if dt["ops"][op["deps"]]["hasdep"] != 1:
                        raise Bad(f"gpu {gid} tb {op['depid']} step {op['deps']}: depended on but hasdep=0")
    return dict(name=root.get("name"), ngpus=ngpus, nchunks=nchunks, gpus=gpus)


def execute(algo, on_op=None):
    """Runs the file; returns per rank its input buffer as a list of Counters (rank -> times)."""
    n, C = algo["ngpus"], algo["nchunks"]
    bufs = {r: {"i": [collections.Counter({r: 1}) for _ in range(C)], "s": collections.defaultdict(collections.Counter)}
            for r in range(n)}
    pc = {(r, b): 0 for r in range(n) for b in algo["gpus"][r]["tbs"]}
    fifo = collections.defaultdict(collections.deque)  # (src, dst, chan) -> messages
    total = sum(len(tb["ops"]) for g in algo["gpus"].values() for tb in g["tbs"].values())
    done = 0

    def rd(r, buf, off, cnt):
        return [collections.Counter(bufs[r][buf][off + i]) for i in range(cnt)]

    def wr(r, buf, off, vals):
        for i, v in enumerate(vals):
            bufs[r][buf][off + i] = v

    progress = True
    while progress:
        progress = False
        for r in range(n):
            for b, tb in algo["gpus"][r]["tbs"].items():
                while pc[(r, b)] < len(tb["ops"]):
                    op = tb["ops"][pc[(r, b)]]
                    if op["depid"] >= 0 and pc[(r, op["depid"])] <= op["deps"]:
                        break
                    typ, cnt = op["type"], op["cnt"]
                    msg = None
                    if typ in RECV:
                        q = fifo[(tb["recv"], r, tb["chan"])]
                        if not q:
                            break
                        msg = q.popleft()
                        if len(msg) != cnt:
                            raise Bad(f"rank {r} tb {b} step {pc[(r, b)]}: receives {cnt} chunks, peer sent {len(msg)}")
                    out = None
                    if typ == "s":
                        out = rd(r, op["sb"], op["so"], cnt)
                    elif typ == "r":
                        wr(r, op["db"], op["do"], msg)
                    elif typ == "rcs":
                        wr(r, op["db"], op["do"], msg)
                        out = msg
                    elif typ == "rrs":
                        out = [a + m for a, m in zip(rd(r, op["sb"], op["so"], cnt), msg)]
                    elif typ == "rrc":
                        wr(r, op["db"], op["do"], [a + m for a, m in zip(rd(r, op["db"], op["do"], cnt), msg)])
                    elif typ == "rrcs":
                        out = [a + m for a, m in zip(rd(r, op["sb"], op["so"], cnt), msg)]
                        wr(r, op["db"], op["do"], out)
                    elif typ == "cpy":
                        wr(r, op["db"], op["do"], rd(r, op["sb"], op["so"], cnt))
                    elif typ == "re":
                        wr(r, op["db"], op["do"],
                           [a + m for a, m in zip(rd(r, op["db"], op["do"], cnt), rd(r, op["sb"], op["so"], cnt))])
                    if out is not None:
                        fifo[(r, tb["send"], tb["chan"])].append(out)
                    if on_op:
                        on_op(r, b, tb, op, msg is not None, out is not None)
                    pc[(r, b)] += 1
                    done += 1
                    progress = True
    if done != total:
        stuck = [f"rank {r} tb {b} step {pc[(r, b)]} ({algo['gpus'][r]['tbs'][b]['ops'][pc[(r, b)]]['type']})"
                 for (r, b) in pc if pc[(r, b)] < len(algo["gpus"][r]["tbs"][b]["ops"])]
        raise Bad(f"deadlock after {done} of {total} steps; waiting: " + "; ".join(stuck[:6]))
    left = [k for k, q in fifo.items() if q]
    if left:
        raise Bad(f"messages never received on (sender, receiver, channel) {left[:4]}")
    return {r: bufs[r]["i"] for r in range(n)}


def check_allreduce(result, n):
    want = collections.Counter({r: 1 for r in range(n)})
    for r, chunks in result.items():
        for c, v in enumerate(chunks):
            if v != want:
                raise Bad(f"rank {r} chunk {c} ends with contributions {dict(v)}, not every rank's once")


def msccl_tools_check(algo, tools_dir):
    """Replays the execution as an MSCCLang program; msccl-tools' AllReduce.check decides."""
    # Import msccl.language without msccl/__init__.py (which loads the synthesizer's z3/igraph).
    pkg = types.ModuleType("msccl")
    pkg.__path__ = [tools_dir.rstrip("/") + "/msccl"]
    sys.modules["msccl"] = pkg
    from msccl.language import MSCCLProgram, chunk  # noqa: E402
    from msccl.language.ir import Buffer  # noqa: E402
    from msccl.language.collectives import AllReduce  # noqa: E402
    from msccl.topologies import fully_connected  # noqa: E402

    n, C = algo["ngpus"], algo["nchunks"]
    prog = MSCCLProgram("p2v-check", fully_connected(n), AllReduce(n, C, True), 1)
    inflight = collections.defaultdict(collections.deque)  # (src, dst, chan) -> scratch refs at src

    def on_op(r, b, tb, op, received, sent):
        typ, cnt = op["type"], op["cnt"]
        msg = inflight[(tb["recv"], r, tb["chan"])].popleft() if received else None
        here = lambda off: chunk(r, Buffer.input, off, cnt)  # noqa: E731
        out = None
        if typ == "s":
            out = here(op["so"]).copy(r, "p2vmsg")
        elif typ == "r":
            msg.copy(r, Buffer.input, op["do"])
        elif typ == "rcs":
            msg.copy(r, Buffer.input, op["do"])
            out = here(op["do"]).copy(r, "p2vmsg")
        elif typ == "rrs":
            out = msg.copy(r, "p2vmsg")
            out.reduce(here(op["so"]))
        elif typ == "rrc":
            here(op["do"]).reduce(msg)
        elif typ == "rrcs":
            here(op["do"]).reduce(msg)
            out = here(op["do"]).copy(r, "p2vmsg")
        elif typ in ("cpy", "re"):
            raise Bad(f"'{typ}' is not replayed on msccl-tools by this checker")
        if sent:
            inflight[(r, tb["send"], tb["chan"])].append(out)

    with prog:
        execute(algo, on_op)
        ok = prog.check()
    if not ok:
        raise Bad("msccl-tools' AllReduce check failed (its messages above)")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("xml")
    ap.add_argument("--msccl-tools", metavar="DIR", help="a checkout of microsoft/msccl-tools: also run its check")
    a = ap.parse_args(argv)
    try:
        algo = load(a.xml)
    except Bad as e:
        print(f"{a.xml}: FAILED: {e}", file=sys.stderr)
        return 1
    except (ET.ParseError, OSError) as e:
        print(f"{a.xml}: error: {e}", file=sys.stderr)
        return 2
    failed = False
    try:  # our execution and AllReduce check
        check_allreduce(execute(algo), algo["ngpus"])
        steps = sum(len(tb["ops"]) for g in algo["gpus"].values() for tb in g["tbs"].values())
        print(f"{a.xml}: structure ok; runs without deadlock ({steps} thread-block steps); every chunk of every "
              f"one of {algo['ngpus']} ranks holds every rank's contribution once (AllReduce)")
    except Bad as e:
        print(f"{a.xml}: FAILED: {e}", file=sys.stderr)
        failed = True
    if a.msccl_tools:  # independently: msccl-tools' own postcondition
        try:
            msccl_tools_check(algo, a.msccl_tools)
            print(f"{a.xml}: msccl-tools ({a.msccl_tools}) AllReduce check: passed")
        except Bad as e:
            print(f"{a.xml}: FAILED (msccl-tools): {e}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
