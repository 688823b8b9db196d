//! A set of validated profiles: the embedded ones, a directory, or both (the directory's
//! profiles replace embedded ones of the same name).

use crate::error::{Location, ProfileError};
use crate::profile::Profile;
use std::path::Path;

/// The profiles compiled into the binary.
const EMBEDDED: &[(&str, &str)] = &[
    (
        "sovereign-node.toml",
        include_str!("../profiles/sovereign-node.toml"),
    ),
    (
        "research-box.toml",
        include_str!("../profiles/research-box.toml"),
    ),
    (
        "constrained-gpu.toml",
        include_str!("../profiles/constrained-gpu.toml"),
    ),
    (
        "cpu-baseline-64.toml",
        include_str!("../profiles/cpu-baseline-64.toml"),
    ),
    ("h200-lab.toml", include_str!("../profiles/h200-lab.toml")),
    (
        "qemu-tcg-test.toml",
        include_str!("../profiles/qemu-tcg-test.toml"),
    ),
    (
        "development.toml",
        include_str!("../profiles/development.toml"),
    ),
];

/// Validated profiles, kept sorted by name (the selection's tie-break order).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProfileSet {
    profiles: Vec<Profile>,
}

impl ProfileSet {
    /// The profiles shipped in the binary (hardware-profiles/profiles/*.toml).
    pub fn embedded() -> Result<ProfileSet, ProfileError> {
        ProfileSet::from_sources(
            EMBEDDED
                .iter()
                .map(|(file, text)| (format!("embedded:{file}"), text.to_string())),
        )
    }

    /// The names and texts of the embedded profile files.
    pub fn embedded_sources() -> impl Iterator<Item = (&'static str, &'static str)> {
        EMBEDDED.iter().copied()
    }

    /// Every `*.toml` file of `dir` (not recursive), read in name order.
    pub fn load_dir(dir: &Path) -> Result<ProfileSet, ProfileError> {
        ProfileSet::from_sources(read_dir_sources(dir)?)
    }

    /// The embedded profiles, with those of `dir` replacing the ones of the same name and
    /// adding the others.
    pub fn embedded_with_overrides(dir: &Path) -> Result<ProfileSet, ProfileError> {
        let overrides = ProfileSet::load_dir(dir)?;
        let mut set = ProfileSet::embedded()?;
        for profile in overrides.profiles {
            set.profiles.retain(|p| p.name != profile.name);
            set.profiles.push(profile);
        }
        set.profiles.sort_by(|a, b| a.name.cmp(&b.name));
        set.check_defaults()?;
        Ok(set)
    }

    /// Parses `(file name, text)` pairs; names must be unique.
    pub fn from_sources(
        sources: impl IntoIterator<Item = (String, String)>,
    ) -> Result<ProfileSet, ProfileError> {
        let mut profiles: Vec<Profile> = Vec::new();
        for (file, text) in sources {
            let profile = Profile::parse(&file, &text)?;
            if let Some(first) = profiles.iter().find(|p| p.name == profile.name) {
                return Err(ProfileError::DuplicateName {
                    location: name_location(&file, &text),
                    name: profile.name,
                    first_file: first.source.clone(),
                });
            }
            profiles.push(profile);
            // Checked in input order, so the error names the later file.
            check_defaults(&profiles)?;
        }
        profiles.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(ProfileSet { profiles })
    }

    fn check_defaults(&self) -> Result<(), ProfileError> {
        check_defaults(&self.profiles)
    }

    /// Sorted by name.
    pub fn profiles(&self) -> &[Profile] {
        &self.profiles
    }

    /// The profile named `name`, if the set has one.
    pub fn get(&self, name: &str) -> Option<&Profile> {
        self.profiles.iter().find(|p| p.name == name)
    }
}

fn read_dir_sources(dir: &Path) -> Result<Vec<(String, String)>, ProfileError> {
    let io_error = |source| ProfileError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_error)? {
        let path = entry.map_err(io_error)?.path();
        if path.extension().is_some_and(|ext| ext == "toml") && path.is_file() {
            paths.push(path);
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).map_err(|source| ProfileError::Io {
                path: path.clone(),
                source,
            })?;
            Ok((path.display().to_string(), text))
        })
        .collect()
}

/// Where `name = ` is in a file (for duplicate-name errors); the start of the file otherwise.
fn name_location(file: &str, text: &str) -> Location {
    let offset = text
        .lines()
        .scan(0usize, |offset, line| {
            let start = *offset;
            *offset += line.len() + 1;
            Some((start, line))
        })
        .find(|(_, line)| line.trim_start().starts_with("name"))
        .map_or(0, |(start, _)| start);
    Location::at(file, text, offset)
}

/// At most one development default.
fn check_defaults(profiles: &[Profile]) -> Result<(), ProfileError> {
    let mut defaults = profiles.iter().filter(|p| p.development_default);
    if let (Some(first), Some(second)) = (defaults.next(), defaults.next()) {
        return Err(ProfileError::SecondDefault {
            location: second
                .development_default_at
                .clone()
                .unwrap_or_else(|| Location {
                    file: second.source.clone(),
                    line: 1,
                    column: 1,
                }),
            name: second.name.clone(),
            first: first.name.clone(),
        });
    }
    Ok(())
}
