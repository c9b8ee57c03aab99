#!/usr/bin/env python3
"""tools/ncu_kernel_table.py --issue, --stalls and its time table on an Nsight Compute CSV written here (the
form `ncu --csv` prints, its own messages and a program's lines between the rows): two launches of one kernel
and grid are averaged, another grid gets its own line, the stall reasons and pipes come out largest first,
with the small ones left out, and the SM clock where it was measured; the time table sums a kernel's
launches over its grids, with the bytes it moved and their rate. --compare on two windows of training steps
(one xz-compressed) counts only their whole steps, between the first and last k_optim.

    ncu_table_test.py TOOLS_DIR"""
import lzma
import os
import subprocess
import sys
import tempfile

HEAD = ['ID', 'Process ID', 'Process Name', 'Host Name', 'Kernel Name', 'Context', 'Stream', 'Block Size',
        'Grid Size', 'Device', 'CC', 'Section Name', 'Metric Name', 'Metric Unit', 'Metric Value']
KERNEL = 'void (anonymous namespace)::mode_kernel<5, 2, 0>((anonymous namespace)::Params)'


def row(launch, grid, metric, unit, value):
    cells = [str(launch), '1', 'bench-cuda-gemm', '127.0.0.1', KERNEL, '1', '13', '(256, 1, 1)', grid, '0',
             '9.0', 'Command line profiler metrics', metric, unit, value]
    return ','.join('"%s"' % c for c in cells)


def launch(i, grid, us, warp_insts, issue, barrier, wait, lsu, clock=None, moved=None):
    st = 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio'
    pipe = 'sm__inst_executed_pipe_%s.avg.pct_of_peak_sustained_active'
    return [row(i, grid, 'gpu__time_duration.sum', 'usecond', us),
            row(i, grid, 'smsp__inst_executed.sum', 'inst', warp_insts),
            row(i, grid, 'smsp__issue_active.avg.pct_of_peak_sustained_active', '%', issue),
            row(i, grid, 'sm__warps_active.avg.pct_of_peak_sustained_active', '%', '24.9'),
            row(i, grid, st % 'barrier', '', barrier),
            row(i, grid, st % 'wait', '', wait),
            row(i, grid, st % 'selected', '', '1'),
            row(i, grid, st % 'sleeping', '', '0.01'),   # under 0.05: left out
            row(i, grid, pipe % 'fma', '%', '61.5'),
            row(i, grid, pipe % 'lsu', '%', lsu),
            row(i, grid, pipe % 'tensor', '%', '0'),     # under 5%: left out
            row(i, grid, 'l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum', '', '300'),
            row(i, grid, 'smsp__inst_executed_op_shared_ld.sum', 'inst', '120')] + (  # 2.50 conflicts a load
            [row(i, grid, 'sm__cycles_elapsed.avg.per_second', 'cycle/second', clock)] if clock else []) + (
            [row(i, grid, 'dram__bytes_read.sum', 'Mbyte', moved[0]),
             row(i, grid, 'dram__bytes_write.sum', 'Kbyte', moved[1])] if moved else [])


def step_kernel(i, name, us, mb=None):
    """One launch of a kernel named name (time, and bytes read where mb is given) for --compare's windows."""
    cells = lambda metric, unit, v: ','.join('"%s"' % c for c in [
        str(i), '1', 'amdnn-onnx', '127.0.0.1', name, '1', '13', '(256, 1, 1)', '(8, 1, 1)', '0', '9.0',
        'Command line profiler metrics', metric, unit, v])
    return [cells('gpu__time_duration.sum', 'nsecond', '%d' % (us * 1000))] + (
        [cells('dram__bytes_read.sum', 'Mbyte', str(mb)), cells('dram__bytes_write.sum', 'byte', '0')]
        if mb is not None else [])


def compare(tools, tmp):
    """Old window: a, [k_optim, a, b, k_optim], a: one whole step (a 5 us, b 3, k_optim 1).
    New window: [k_optim, a, k_optim, a, c, k_optim], a partial step after it: two whole steps, a 4 us each,
    c 2 over both, so 1.0 a step; b gone; a's 10 MB read a launch."""
    optim = 'k_optim(int, int, int, int, int, amd_optim_coeffs, float *, float *, float *, int64_t)'
    a, b, c = 'void k_a<int>(conv2d, const float *)', 'void k_b(float *)', 'k_c(const float *, float *)'
    head = '"' + '","'.join(HEAD) + '"'
    old = [head]
    for i, (n, us, mb) in enumerate([(a, 5, 10), (optim, 1, 0), (a, 5, 10), (b, 3, 0), (optim, 1, 0), (a, 5, 10)]):
        old += step_kernel(i, n, us, mb)
    new = [head, '==PROF== Connected to process 1']
    for i, (n, us, mb) in enumerate([(optim, 1, 0), (a, 4, 10), (optim, 1, 0), (a, 4, 10), (c, 2, 0),
                                     (optim, 1, 0), (a, 4, 10)]):
        new += step_kernel(i, n, us, mb)
    po, pn = os.path.join(tmp, 'old.csv'), os.path.join(tmp, 'new.csv.xz')
    with open(po, 'w') as f:
        f.write('\n'.join(old) + '\n')
    with lzma.open(pn, 'wt') as f:
        f.write('\n'.join(new) + '\n')
    return subprocess.run([sys.executable, os.path.join(tools, 'ncu_kernel_table.py'), '--compare', po, pn],
                          capture_output=True, text=True, check=True).stdout


def main():
    tools = sys.argv[1]
    macs = 1000.0
    lines = ['"' + '","'.join(HEAD) + '"', '==PROF== Connected to process 1', 'device: NVIDIA H200, 132 SMs']
    # grid (512, 1, 1): 0.5 and 0.7 barrier warps, so 0.60; instructions 100 and 120 warp instructions a
    # launch: 32 * 110 / 1000 = 3.520 a MAC
    # grid (512, 1, 1) ran at 1.78 and 1.77 GHz (a mean of 1.775); grid (96, 1, 1) has no clock metric
    # bytes: 10 + 14 MB read and 500 + 1,500 kB written in 10 + 14 + 5 us: 26 MB in 29 us, 0.90 TB/s
    lines += launch(0, '(512, 1, 1)', '10', '100', '70', '0.5', '0.2', '8', '1,780,000,000', ('10', '500'))
    lines += launch(1, '(512, 1, 1)', '14', '120', '74', '0.7', '0.2', '12', '1,770,000,000', ('14', '1,500'))
    lines += launch(2, '(96, 1, 1)', '5', '1,000', '50', '0.1', '0.9', '3')
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'k.csv')
        with open(path, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        tool = [sys.executable, os.path.join(tools, 'ncu_kernel_table.py'), path]
        issue = subprocess.run(tool + ['--issue', str(macs)], capture_output=True, text=True, check=True).stdout
        out = subprocess.run(tool + ['--stalls', str(macs)], capture_output=True, text=True, check=True).stdout
        times = subprocess.run(tool + ['2'], capture_output=True, text=True, check=True).stdout
        cmp_out = compare(tools, tmp)
    print(times)
    print(cmp_out)
    print(out)
    bad = []

    def want(cond, what):
        if not cond:
            bad.append(what)
    kl = [l for l in out.splitlines() if 'mode_kernel<' in l]
    want(len(kl) == 2, 'one line per kernel and grid (2), got %d' % len(kl))
    if len(kl) == 2:
        f0, f1 = kl[0].split(), kl[1].split()
        want(f0[-4:] == ['2', '12.0', '3.520', '72.0'], 'grid 512: 2 launches, 12.0 us, 3.520 a MAC, 72.0%%: %s' % f0)
        want(f1[-4:] == ['1', '5.0', '32.000', '50.0'], 'grid 96: 1 launch, 5.0 us, 32.000 a MAC, 50.0%%: %s' % f1)
    stalls = [l.strip() for l in out.splitlines() if l.strip().startswith('stalled')]
    pipes = [l.strip() for l in out.splitlines() if l.strip().startswith('pipes')]
    want(stalls[:1] == ['stalled warps per issue: selected 1.00, barrier 0.60, wait 0.20'],
         'grid 512 stalls, largest first, sleeping left out: %s' % stalls[:1])
    want(stalls[1:2] == ['stalled warps per issue: selected 1.00, wait 0.90, barrier 0.10'],
         'grid 96 stalls: %s' % stalls[1:2])
    want(pipes[:1] == ['pipes, % of peak: fma 61.5, lsu 10.0; warps active 24.9% of the SM\'s maximum; '
                       'shared loads: 2.50 bank conflicts each; SM clock 1.775 GHz'],
         'grid 512 pipes, tensor left out, the mean clock: %s' % pipes[:1])
    want(pipes[1:2] == ['pipes, % of peak: fma 61.5; warps active 24.9% of the SM\'s maximum; '
                        'shared loads: 2.50 bank conflicts each'],
         'grid 96 pipes, lsu under 5%% left out, no clock without its metric: %s' % pipes[1:2])
    want('stalled' not in issue and len([l for l in issue.splitlines() if 'mode_kernel<' in l]) == 2,
         '--issue prints the kernel lines alone')
    tl = [l.split() for l in times.splitlines() if l.startswith('void mode_kernel')]
    want(len(tl) == 1 and tl[0][2:] == ['3', '29.0', '100.0%', '14.5', '0.024', '0.002', '0.90'],
         'time table: one line for mode_kernel (namespace and template left out), 3 launches, 29.0 us, 14.5 a '
         'step of 2, 0.024 GB read, 0.002 GB written, 0.90 TB/s: %s' % tl)
    want('GB read' in times.splitlines()[0], 'time table: the bytes columns when the bytes metrics are there')
    cl = {l.split()[0] if not l.startswith('void') else l.split()[1]: l.split()[-5:] for l in cmp_out.splitlines()[2:]}
    want(cmp_out.splitlines()[:1] == ['whole steps: old 1, new 2; launches a step: old 3.0, new 2.5'],
         '--compare: whole steps and launches a step: %s' % cmp_out.splitlines()[:1])
    want(cl.get('k_a') == ['5.0', '4.0', '-1.0', '0.010', '0.010'], '--compare k_a 5.0 -> 4.0, 10 MB a step: %s'
         % cl.get('k_a'))
    want(cl.get('k_b') == ['3.0', '0.0', '-3.0', '0.000', '0.000'], '--compare k_b gone: %s' % cl.get('k_b'))
    want(cl.get('k_c') == ['0.0', '1.0', '+1.0', '0.000', '0.000'], '--compare k_c new: %s' % cl.get('k_c'))
    want(cl.get('k_optim') == ['1.0', '1.0', '+0.0', '0.000', '0.000'], '--compare k_optim: %s' % cl.get('k_optim'))
    want(cmp_out.splitlines()[-1].split() == ['all', '9.0', '6.0', '-3.0'],
         '--compare all: 9.0 -> 6.0: %s' % cmp_out.splitlines()[-1:])
    for b in bad:
        print('FAIL: ' + b)
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
