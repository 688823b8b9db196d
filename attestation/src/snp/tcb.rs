//! TCB_VERSION decoding. The 64-bit TCB is a set of independent security patch levels, one
//! per firmware component, whose byte positions depend on the processor generation; it is
//! only ever compared field by field (a newer microcode must not hide an older bootloader).

use serde::{Deserialize, Serialize};

/// AMD EPYC generations with SEV-SNP whose AMD root keys are pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Product {
    /// Zen 3 (EPYC 7003).
    Milan,
    /// Zen 4 (EPYC 9004).
    Genoa,
    /// Zen 5 (EPYC 9005).
    Turin,
}

impl Product {
    /// Every product, in generation order.
    pub const ALL: [Product; 3] = [Product::Milan, Product::Genoa, Product::Turin];

    /// The product's name: "Milan", "Genoa" or "Turin".
    pub fn name(self) -> &'static str {
        match self {
            Product::Milan => "Milan",
            Product::Genoa => "Genoa",
            Product::Turin => "Turin",
        }
    }

    /// Product from the report's CPUID fields (report version 3+), per AMD's family/model map.
    pub fn from_cpuid(family: u8, model: u8) -> Option<Product> {
        match (family, model) {
            (0x19, 0x00..=0x0F) => Some(Product::Milan),
            (0x19, 0x10..=0x1F) | (0x19, 0xA0..=0xAF) => Some(Product::Genoa),
            (0x1A, 0x00..=0x11) => Some(Product::Turin),
            _ => None,
        }
    }

    /// Product from the VCEK's productName extension, e.g. "Milan-B0", "Genoa", "Turin".
    pub fn from_product_name(name: &str) -> Option<Product> {
        let base = name.split('-').next().unwrap_or(name);
        Product::ALL.into_iter().find(|p| p.name() == base)
    }
}

impl std::fmt::Display for Product {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The security patch levels of one TCB_VERSION.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TcbParts {
    /// Turin and later only.
    pub fmc: Option<u8>,
    /// Bootloader security patch level.
    pub bootloader: u8,
    /// PSP OS (TEE) security patch level.
    pub tee: u8,
    /// SNP firmware security patch level.
    pub snp: u8,
    /// Microcode patch level.
    pub microcode: u8,
}

impl TcbParts {
    /// Milan/Genoa: byte 0 bootloader, 1 TEE, 2..5 reserved, 6 SNP, 7 microcode.
    /// Turin: byte 0 FMC, 1 bootloader, 2 TEE, 3 SNP, 4..6 reserved, 7 microcode.
    pub fn decode(raw: u64, product: Product) -> TcbParts {
        let b = raw.to_le_bytes();
        match product {
            Product::Milan | Product::Genoa => TcbParts {
                fmc: None,
                bootloader: b[0],
                tee: b[1],
                snp: b[6],
                microcode: b[7],
            },
            Product::Turin => TcbParts {
                fmc: Some(b[0]),
                bootloader: b[1],
                tee: b[2],
                snp: b[3],
                microcode: b[7],
            },
        }
    }

    /// Whether the reserved bytes of this product's layout are zero.
    pub fn reserved_zero(raw: u64, product: Product) -> bool {
        let b = raw.to_le_bytes();
        match product {
            Product::Milan | Product::Genoa => b[2..6].iter().all(|x| *x == 0),
            Product::Turin => b[4..7].iter().all(|x| *x == 0),
        }
    }

    /// The raw 64-bit TCB value of these parts in `product`'s layout.
    pub fn encode(&self, product: Product) -> u64 {
        let mut b = [0u8; 8];
        match product {
            Product::Milan | Product::Genoa => {
                b[0] = self.bootloader;
                b[1] = self.tee;
                b[6] = self.snp;
                b[7] = self.microcode;
            }
            Product::Turin => {
                b[0] = self.fmc.unwrap_or(0);
                b[1] = self.bootloader;
                b[2] = self.tee;
                b[3] = self.snp;
                b[7] = self.microcode;
            }
        }
        u64::from_le_bytes(b)
    }

    /// Fields of `self` below `minimum` (name, actual, minimum). A minimum without an FMC
    /// value does not constrain FMC.
    pub fn below(&self, minimum: &TcbParts) -> Vec<(&'static str, u8, u8)> {
        let mut out = Vec::new();
        let pairs = [
            ("bootloader", self.bootloader, minimum.bootloader),
            ("tee", self.tee, minimum.tee),
            ("snp", self.snp, minimum.snp),
            ("microcode", self.microcode, minimum.microcode),
        ];
        for (name, actual, min) in pairs {
            if actual < min {
                out.push((name, actual, min));
            }
        }
        if let Some(min_fmc) = minimum.fmc {
            let actual = self.fmc.unwrap_or(0);
            if actual < min_fmc {
                out.push(("fmc", actual, min_fmc));
            }
        }
        out
    }
}

impl std::fmt::Display for TcbParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(fmc) = self.fmc {
            write!(f, "fmc={fmc} ")?;
        }
        write!(
            f,
            "bl={} tee={} snp={} ucode={}",
            self.bootloader, self.tee, self.snp, self.microcode
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milan_layout_matches_the_go_sev_guest_vector() {
        // go-sev-guest attestation.bin: reported_tcb 0x4405000000000002 = bl 2, tee 0, snp 5, ucode 68.
        let t = TcbParts::decode(0x4405000000000002, Product::Milan);
        assert_eq!(
            (t.bootloader, t.tee, t.snp, t.microcode, t.fmc),
            (2, 0, 5, 68, None)
        );
        assert_eq!(t.encode(Product::Milan), 0x4405000000000002);
    }

    #[test]
    fn turin_layout_puts_fmc_first() {
        let t = TcbParts::decode(0x4800_0000_0302_0100, Product::Turin);
        assert_eq!(
            (t.fmc, t.bootloader, t.tee, t.snp, t.microcode),
            (Some(0), 1, 2, 3, 0x48)
        );
    }

    #[test]
    fn comparison_is_per_field_not_lexicographic() {
        // Higher microcode must not compensate for a lower bootloader.
        let actual = TcbParts {
            fmc: None,
            bootloader: 1,
            tee: 0,
            snp: 8,
            microcode: 250,
        };
        let min = TcbParts {
            fmc: None,
            bootloader: 2,
            tee: 0,
            snp: 8,
            microcode: 100,
        };
        assert!(actual.encode(Product::Milan) > min.encode(Product::Milan));
        assert_eq!(actual.below(&min), vec![("bootloader", 1, 2)]);
    }
}
