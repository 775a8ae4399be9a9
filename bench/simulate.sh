#!/bin/sh
# make bench: dovetail simulate on the Azure 2017 trace (bench/trace-azure-vm-2017.csv.gz) with
# the bundled AWS catalog and examples/simulate/cluster.yaml (spot allowed), a disruption pass
# every 10 minutes: Karpenter's first-fit-decreasing (the baseline) against cost packing with
# policies/default.lua. The whole trace (5.7 days) by default; DOVETAIL_BENCH_TRACE_HOURS=6 for the
# first six hours.
set -eu
bin=${1:-build/rel/dovetail}
hours=${DOVETAIL_BENCH_TRACE_HOURS:-137}
echo "== simulate: the Azure trace, first ${hours}h, disruption every 10m"
"$bin" simulate -f examples/simulate/cluster.yaml --trace bench/trace-azure-vm-2017.csv.gz \
  --duration "${hours}h" --disrupt-interval 10m --step 10m --baseline --policy policies/default.lua --timings
