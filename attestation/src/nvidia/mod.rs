//! NVIDIA GPU confidential-computing evidence (Hopper, Blackwell).
