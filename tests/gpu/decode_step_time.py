# SPDX-License-Identifier: Apache-2.0
"""Times generate() of a many-layer Llama-shaped model, batch 1, for scripts/gpu-bench.sh
(GMT_BENCH_MODEL=decode): where module calls and allocations per second are densest in
inference, so that the roles hooks' cost per module call and the recorder's per block show.

Usage: python3 decode_step_time.py [--history python|all | --tracker SHIM STUB | --roles-ab]
       OUT_JSON
A LlamaForCausalLM from its config (nothing is downloaded): 32 layers, hidden 512, bf16, greedy
generate() of 64 new tokens after a 32-token prompt, once to warm up, then five times timed.
Prints and writes the median ms per token ("ms_per_step": one step is one token) and the median
CPU ms per token of all the process's threads; "steps_run" is every token generated, warm-up
included (gpu-bench.sh divides the recorder's events by it).

--roles-ab (in a traced run): the roles hooks' share, each process its own baseline (between
processes a CPU-bound loop's time moves by more than the share): the timed generate() calls
alternate between the hooks on and off (nn.Module.__call__ given back its original, which turns
every hook that runs per module call off), ten of each; "ms_per_step" is then the hooks-on
median, "off_ms_per_step" the hooks-off one, and "roles_ratio" on over off.
"""
import statistics
import sys
import time

import torch

from bench_run import arguments, start_instrument, write_result

LAYERS, NEW, SAMPLES, AB_SAMPLES = 32, 64, 5, 10


def roles_switch():
    """(on, off): functions that turn the roles hooks' Module.__call__ wrapper on and off."""
    module = torch.nn.Module
    wrapper = module.__call__
    original = getattr(wrapper, "__wrapped__", None)
    if original is None:
        raise SystemExit("--roles-ab: nn.Module.__call__ is not wrapped (not traced, or roles off)")

    def on():
        module.__call__ = wrapper

    def off():
        module.__call__ = original

    return on, off


def main():
    from transformers import LlamaConfig, LlamaForCausalLM

    ab = len(sys.argv) > 1 and sys.argv[1] == "--roles-ab"
    if ab:
        del sys.argv[1]
    instrument, out_path = arguments()
    config = LlamaConfig(
        vocab_size=32000, hidden_size=512, intermediate_size=1408, num_hidden_layers=LAYERS,
        num_attention_heads=8, num_key_value_heads=2, head_dim=64)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()
    ids = torch.randint(0, config.vocab_size, (1, 32), device="cuda")
    kwargs = dict(max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False, pad_token_id=0)
    start_instrument(instrument)
    switches = roles_switch() if ab else None

    def generate():
        """(wall ms, CPU ms) per token of one generate()."""
        torch.cuda.synchronize()
        t0, c0 = time.perf_counter(), time.process_time()
        model.generate(ids, **kwargs)
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / NEW * 1e3, (time.process_time() - c0) / NEW * 1e3

    with torch.no_grad():
        generate()  # the warm-up
        if switches is None:
            samples = [generate() for _ in range(SAMPLES)]
            off = []
        else:
            samples, off = [], []
            for i in range(2 * AB_SAMPLES):
                # on, off, off, on, on, off...: neither side always runs first.
                hooks_on = (i % 4) in (0, 3)
                switches[0 if hooks_on else 1]()
                (samples if hooks_on else off).append(generate())
            switches[0]()
    times, cpu_times = [s[0] for s in samples], [s[1] for s in samples]
    result = {
        "ms_per_step": statistics.median(times), "samples": times,
        "cpu_ms_per_step": statistics.median(cpu_times), "cpu_samples": cpu_times,
        "model": "decode", "steps_run": (1 + len(samples) + len(off)) * NEW,
        "allocator_backend": torch.cuda.get_allocator_backend()}
    if off:
        off_ms = statistics.median(s[0] for s in off)
        result.update({"off_ms_per_step": off_ms, "off_samples": [s[0] for s in off],
                       "roles_ratio": result["ms_per_step"] / off_ms,
                       "roles_cpu_ratio": result["cpu_ms_per_step"]
                       / statistics.median(s[1] for s in off)})
    write_result(out_path, result)


if __name__ == "__main__":
    main()
