//! Probe of the machine: CPU topology and features (/proc, /sys), SEV-SNP status, GPUs (NVML).
