#!/usr/bin/env python3
"""Writes metrics-t0.txt and metrics-t1.txt (see README.md). Deterministic (fixed seed)."""
import random


def dec_buckets(lo, hi):
    return [m * 10**e for e in range(lo, hi + 1) for m in (1, 2, 5)]


def fmt(v):
    s = repr(v)
    return s[:-2] if s.endswith(".0") else s


def hist(name, help_text, label_sets, buckets, observations):
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} histogram"]
    for labels in label_sets:
        obs = observations[tuple(labels)]
        lab = ",".join(f'{k}="{v}"' for k, v in labels)
        for b in buckets:
            lines.append(f'{name}_bucket{{{lab},le="{b:.10g}"}} {sum(1 for o in obs if o <= b)}')
        lines.append(f'{name}_bucket{{{lab},le="+Inf"}} {len(obs)}')
        lines.append(f"{name}_sum{{{lab}}} {fmt(round(sum(obs), 6))}")
        lines.append(f"{name}_count{{{lab}}} {len(obs)}")
    return lines


def page(fin, cert, extra_ckpt, extra_dkg):
    random.seed(7)
    out = [
        "# HELP artifact_pool_consensus_height_stat The height of objects in a consensus pool, by pool type, object type and stat",
        "# TYPE artifact_pool_consensus_height_stat gauge",
    ]
    for pool in ("unvalidated", "validated"):
        for stat in ("max", "min"):
            for typ in ("block_proposal", "catch_up_package", "finalization", "notarization", "random_beacon"):
                if typ == "catch_up_package":
                    v = (fin // 500) * 500
                else:
                    v = fin + (1 if typ in ("block_proposal", "notarization", "random_beacon") else 0)
                    if pool == "unvalidated":
                        v += 1
                if stat == "min":
                    v = max(0, (fin // 500) * 500 - 200) if pool == "validated" else fin - 3
                out.append(f'artifact_pool_consensus_height_stat{{pool_type="{pool}",stat="{stat}",type="{typ}"}} {v}')
    out += [
        "# HELP consensus_batch_height The height of batches sent to Message Routing",
        "# TYPE consensus_batch_height gauge",
        f"consensus_batch_height {fin}",
        "# HELP consensus_finalization_certified_state_difference The height difference between the finalized tip and the referenced certified state",
        "# TYPE consensus_finalization_certified_state_difference gauge",
        f"consensus_finalization_certified_state_difference {fin - cert}",
    ]
    ck_create = [round(random.uniform(0.4, 1.6), 4) for _ in range(12 + extra_ckpt)]
    ck_manifest = [round(random.uniform(2.0, 9.0), 4) for _ in range(12 + extra_ckpt)]
    out += hist(
        "state_manager_checkpoint_op_duration_seconds",
        "Duration of checkpoint operations in seconds.",
        [[("op", "compute_manifest")], [("op", "create")]],
        dec_buckets(-3, 1),
        {(("op", "compute_manifest"),): ck_manifest, (("op", "create"),): ck_create},
    )
    out += [
        "# HELP state_manager_last_computed_manifest_height Height of the last checkpoint for which a manifest was computed.",
        "# TYPE state_manager_last_computed_manifest_height gauge",
        f"state_manager_last_computed_manifest_height {(cert // 500) * 500}",
        "# HELP state_manager_latest_certified_height Height of the latest certified state.",
        "# TYPE state_manager_latest_certified_height gauge",
        f"state_manager_latest_certified_height {cert}",
    ]
    observations, label_sets = {}, []
    for method, (lo, hi, n) in [
        ("create_dealing", (0.9, 1.4, 4)),
        ("create_transcript", (0.2, 0.5, 4)),
        ("load_transcript", (1.5, 3.5, 4)),
        ("verify_dealing", (0.05, 0.12, 52)),
    ]:
        labels = (("domain", "ni_dkg"), ("method_name", method), ("result", "ok"), ("scope", "full"))
        label_sets.append(list(labels))
        extra = extra_dkg * (13 if method == "verify_dealing" else 1)
        observations[labels] = [round(random.uniform(lo, hi), 5) for _ in range(n + extra)]
    for method in ("verify_threshold_sig_share", "combine_threshold_sig_shares"):
        labels = (("domain", "threshold_signature"), ("method_name", method), ("result", "ok"), ("scope", "full"))
        label_sets.append(list(labels))
        observations[labels] = [round(random.uniform(0.0008, 0.003), 6) for _ in range(300)]
    out += hist("crypto_duration_seconds", "Histogram of method call durations in seconds",
                label_sets, dec_buckets(-4, 1), observations)
    out += [
        "# HELP process_resident_memory_bytes Resident memory size in bytes.",
        "# TYPE process_resident_memory_bytes gauge",
        "process_resident_memory_bytes 6283526144",
    ]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    with open("metrics-t0.txt", "w") as f:
        f.write(page(481220, 481218, 0, 0))
    with open("metrics-t1.txt", "w") as f:
        f.write(page(481236, 481235, 1, 1))
