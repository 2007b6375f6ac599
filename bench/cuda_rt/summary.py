"""Prints the cuda_rt measurement table from rt_bench --results files and torch_matmul.py
outputs of one gpu.sh run. The matmul rates are means over the interleaved runs (torch,
ours, torch, ours), so that clock and temperature drift weigh on both sides alike."""
import statistics
import sys


def read(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if parts:
                    rows.append(parts)
    except OSError:
        pass
    return rows


def main():
    ours = read(sys.argv[1])
    torch_files = sys.argv[2:]
    theirs = [r for p in torch_files for r in read(p)]
    print("| measurement | ours | anchor | ratio | goal |")
    print("|---|---|---|---|---|")
    ceiling = next((r for r in ours if r[0] == "ceiling"), None)
    torch_copy = [float(r[2]) for r in theirs if r[0] == "copy"]
    kernels = [(r[1], float(r[2])) for r in ours if r[0] == "copykernel"]
    if ceiling and kernels:
        name, bw = max(kernels, key=lambda k: k[1])
        ceil_name, ceil = ceiling[1], float(ceiling[2])
        if torch_copy and max(torch_copy) > ceil:
            ceil_name, ceil = "torch copy_", max(torch_copy)
        print(f"| NVRTC copy kernel {name}, 1 GiB | {bw:.0f} GB/s | fastest d2d copy "
              f"({ceil_name}) {ceil:.0f} GB/s | {bw / ceil:.3f} | >= 0.90 |")
    for n in ("4096", "8192"):
        o = [float(r[2]) for r in ours if r[0] == "matmul" and r[1] == n]
        t = [float(r[2]) for r in theirs if r[0] == "matmul" and r[1] == n]
        if o and t:
            mo, mt = statistics.mean(o), statistics.mean(t)
            print(f"| cuBLASLt bf16 {n}^3, prepared + graph ({len(o)} runs: "
                  f"{', '.join(f'{x:.1f}' for x in o)}) | {mo:.1f} TFLOP/s | torch.matmul "
                  f"({', '.join(f'{x:.1f}' for x in t)}) {mt:.1f} TFLOP/s | {mo / mt:.3f} "
                  f"| >= 0.97 |")
    for r in ours:
        if r[0] == "replay":
            n, ev, wall, launch = r[1], float(r[2]), float(r[3]), float(r[4])
            print(f"| graph replay, chain of {n} empty kernels | {ev:.3f} us/node (events), "
                  f"{wall:.3f} (wall) | individual launches {launch:.3f} us (wall) | "
                  f"{wall / launch:.2f} | <= 1 us/node |")


if __name__ == "__main__":
    main()
