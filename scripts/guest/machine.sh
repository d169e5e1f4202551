# shellcheck shell=bash disable=SC2034  # sets variables for scripts/guest/run
# The guest machine's definition, sourced by scripts/guest/run: its memory layout per variant, where the
# slow-tier plugin finds node 1 in that layout, and the slow-tier presets. docs/guest.md explains each value.

# machine_memory VARIANT CPUS M0_MIB M1_MIB: sets mem_args (QEMU options), slow_lo/slow_hi (node 1's range in
# the plugin's address units) and fast_lo/fast_hi (node 0's, which the plugin counts but never charges).
# Node 0's backend must come first: the ranges depend on the order.
machine_memory() {
  local variant=$1 cpus=$2 m0=$3 m1=$4 mib=$((1024 * 1024))
  # Node 0's block is the first (offset 0), mapped at 0 in the machine's RAM container in both variants.
  fast_lo=0 fast_hi=$((m0 * mib))
  local node0=(-object "memory-backend-ram,id=m0,size=${m0}M" -numa "node,nodeid=0,cpus=0-$((cpus - 1)),memdev=m0")
  case $variant in
    plain)
      mem_args=(-machine pc -m $((m0 + m1))M "${node0[@]}"
        -object "memory-backend-ram,id=m1,size=${m1}M" -numa node,nodeid=1,memdev=m1)
      # QEMU 7.2 gives a plugin RAM block offset + block address + offset in the block. Node 1's block
      # follows node 0's (offset M0) and is mapped at M0 in the machine's RAM container: 2*M0.
      slow_lo=$((2 * m0 * mib)) slow_hi=$(((2 * m0 + m1) * mib)) ;;
    kmem-dax)
      # An NVDIMM without a label area on node 1; the guest's kmem-dax-setup onlines it as system RAM.
      mem_args=(-machine pc,nvdimm=on -m "${m0}M,slots=2,maxmem=$((m0 + m1 + 1024))M" "${node0[@]}"
        -numa node,nodeid=1
        -object "memory-backend-ram,id=m1,size=${m1}M" -device nvdimm,id=nvdimm1,memdev=m1,node=1)
      # The NVDIMM's block (offset M0) is mapped through an alias, so its own address is 0: M0.
      slow_lo=$((m0 * mib)) slow_hi=$(((m0 + m1) * mib)) ;;
    *) return 1 ;;
  esac
  mem_args+=(-numa dist,src=0,dst=1,val=20)
}

# slow_tier_delays PRESET: sets delay_r, delay_w, delay_s: ns of busy-wait per 64-byte line missed on node 1
# by a load, by a store, and by a load continuing a sequential stream. Returns 1 for an unknown preset.
# The presets target published ratios (docs/guest.md, "Presets"); tests/guest checks them in the guest.
slow_tier_delays() {
  case $1 in
    none) delay_r=0 delay_w=0 delay_s=0 ;;
    optane) delay_r=300 delay_w=450 delay_s=170 ;;
    cxl) delay_r=170 delay_w=100 delay_s=40 ;;
    custom:*)
      [[ $1 =~ ^custom:([0-9]+),([0-9]+)(,([0-9]+))?$ ]] || return 1
      delay_r=${BASH_REMATCH[1]} delay_w=${BASH_REMATCH[2]} delay_s=${BASH_REMATCH[4]:-${BASH_REMATCH[1]}} ;;
    *) return 1 ;;
  esac
}
