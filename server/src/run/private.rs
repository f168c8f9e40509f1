//! The data dir kept to hookd's own user: read by no other local account.

use std::{
    fs::Permissions,
    io,
    os::unix::fs::{MetadataExt, PermissionsExt},
    path::Path,
};

use rustix::{fs::Mode, process::umask};

/// The bits no file or directory of the data dir grants.
const NOT_OURS: u32 = 0o077;

/// Masks group and other bits off everything this process creates from
/// now on (keeping any stricter mask it started with), creates `data_dir`
/// `0700` and takes group and other bits off what is already in it.
///
/// The data dir kept to hookd's own user: tenants' payloads, the log and
/// the keys are read by no other local account. Once at start, the
/// process's file-creation mask drops every group and other bit (so every
/// file sled, the write-ahead log and the keyring create is `0600`, every
/// directory `0700`), and what an older hookd left readable is tightened.
pub(super) fn keep_private(data_dir: &Path) -> io::Result<()> {
    let before = umask(Mode::from_raw_mode(NOT_OURS));
    umask(before | Mode::from_raw_mode(NOT_OURS));
    std::fs::create_dir_all(data_dir)?;
    let mut refused = Vec::new();
    tighten(data_dir, rustix::process::geteuid().as_raw(), &mut refused)?;
    if !refused.is_empty() {
        tracing::warn!(
            data_dir = %data_dir.display(),
            paths = ?refused,
            "these paths in the data dir belong to another user and stay readable by others; \
             chown them to hookd's user (or make them 0700 for a directory, 0600 for a file)"
        );
    }
    Ok(())
}

/// Takes group and other bits off `path` and, for a directory, everything
/// under it (symbolic links are not followed); what belongs to another
/// user than `me` and grants them is listed in `refused`.
fn tighten(path: &Path, me: u32, refused: &mut Vec<String>) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    let mode = meta.mode() & 0o7777;
    if mode & NOT_OURS != 0 {
        match meta.uid() == me {
            true => std::fs::set_permissions(path, Permissions::from_mode(mode & !NOT_OURS))?,
            false => refused.push(path.display().to_string()),
        }
    }
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            tighten(&entry?.path(), me, refused)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().mode() & 0o777
    }

    /// A data dir an older hookd left `0755` with `0644` files is made
    /// `0700` and `0600` throughout; what is created afterwards is so too.
    #[test]
    fn an_open_data_dir_is_closed_and_new_files_are_private() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        std::fs::create_dir_all(data.join("store/blobs")).unwrap();
        std::fs::write(data.join("store/db"), b"x").unwrap();
        std::fs::write(data.join("store/blobs/1"), b"x").unwrap();
        std::fs::write(root.path().join("outside"), b"x").unwrap();
        for (path, mode) in [
            (data.clone(), 0o755),
            (data.join("store"), 0o755),
            (data.join("store/blobs"), 0o750),
            (data.join("store/db"), 0o644),
            (data.join("store/blobs/1"), 0o640),
            (root.path().join("outside"), 0o644),
        ] {
            std::fs::set_permissions(path, Permissions::from_mode(mode)).unwrap();
        }
        std::os::unix::fs::symlink(root.path().join("outside"), data.join("link")).unwrap();

        keep_private(&data).unwrap();
        std::fs::create_dir(data.join("wal")).unwrap();
        std::fs::write(data.join("wal/00000001"), b"x").unwrap();

        for (path, want) in [
            ("", 0o700),
            ("store", 0o700),
            ("store/blobs", 0o700),
            ("store/db", 0o600),
            ("store/blobs/1", 0o600),
            ("wal", 0o700),
            ("wal/00000001", 0o600),
        ] {
            assert_eq!(mode(&data.join(path)), want, "{path}");
        }
        assert_eq!(
            mode(&root.path().join("outside")),
            0o644,
            "a link is not followed out of the data dir"
        );
    }
}
