//! The user edgert runs as: in the `video` group (cameras, the GPU on JetPack 4), able to read the
//! power sensors without root, able to write the engine and kernel caches, with disk free for them.

use std::ffi::CString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::{Area, Check, Facts, Options, Outcome};
use crate::metrics::power::{PowerSensors, Reading};

/// Disk an engine cache needs at least: an engine of a detector is tens to hundreds of MB.
const MIN_FREE_BYTES: u64 = 512 << 20;

pub fn checks() -> Vec<Check> {
    vec![
        Check::new(Area::User, "video group", 50, video_group),
        Check::new(Area::User, "power sensors readable", 50, sensors_readable),
        Check::new(Area::User, "engine cache", 50, |_, _| {
            writable(&crate::user_cache::dir("EDGERT_ENGINE_CACHE", "engines"), "EDGERT_ENGINE_CACHE")
        }),
        Check::new(Area::User, "kernel cache", 50, |_, _| {
            writable(&crate::user_cache::dir("EDGERT_KERNEL_CACHE", "kernels"), "EDGERT_KERNEL_CACHE")
        }),
        Check::new(Area::User, "free disk", 50, |_, _| {
            free_disk(&crate::user_cache::dir("EDGERT_ENGINE_CACHE", "engines"))
        }),
    ]
}

/// Who runs edgert: effective uid and every group id.
struct Identity {
    uid: u32,
    groups: Vec<u32>,
}

impl Identity {
    fn current() -> Identity {
        // SAFETY: getgroups with a zero size only counts; the second call fills a buffer of that
        // size; geteuid and getegid cannot fail.
        let mut groups = unsafe {
            let n = libc::getgroups(0, std::ptr::null_mut()).max(0) as usize;
            let mut groups = vec![0 as libc::gid_t; n];
            let got = libc::getgroups(n as i32, groups.as_mut_ptr()).max(0) as usize;
            groups.truncate(got);
            groups
        };
        groups.push(unsafe { libc::getegid() });
        Identity { uid: unsafe { libc::geteuid() }, groups }
    }
}

/// The `video` group's id in an `/etc/group` text.
fn video_gid(group_file: &str) -> Option<u32> {
    group_file.lines().find_map(|line| {
        let mut fields = line.split(':');
        (fields.next()? == "video").then_some(())?;
        fields.nth(1)?.parse().ok()
    })
}

fn video_group(options: &Options, facts: &Facts) -> Outcome {
    let text = crate::infile::read_to_string(&options.root.join("etc/group"), crate::infile::SENSOR)
        .unwrap_or_default();
    video_member(video_gid(&text), &Identity::current(), facts.jetson)
}

fn video_member(gid: Option<u32>, who: &Identity, jetson: bool) -> Outcome {
    match gid {
        _ if who.uid == 0 => Outcome::pass("root: every device opens (as a user, the video group is needed)"),
        Some(gid) if who.groups.contains(&gid) => Outcome::pass(format!("a member of video ({gid})")),
        Some(gid) => Outcome::fail(
            format!("a member of the video group ({gid}), for cameras and the GPU"),
            "not a member",
            "sudo usermod -aG video $USER, then log in again",
        ),
        None if jetson => {
            Outcome::fail("a video group in /etc/group", "none", "an L4T image has one: sudo groupadd video")
        }
        None => Outcome::skip("no video group in /etc/group"),
    }
}

/// Whether a file of this mode and group can be read by a user who is not root.
fn readable_by(mode: u32, file_gid: u32, groups: &[u32]) -> bool {
    mode & 0o004 != 0 || (mode & 0o040 != 0 && groups.contains(&file_gid))
}

fn reading_files(reading: &Reading) -> Vec<&Path> {
    match reading {
        Reading::Milliwatts(p) => vec![p],
        Reading::VoltsAmps { millivolts, milliamps } => vec![millivolts, milliamps],
        Reading::Microjoules { energy, .. } => vec![energy],
        Reading::Tegrastats => vec![],
    }
}

fn sensors_readable(options: &Options, facts: &Facts) -> Outcome {
    let Ok(sensors) = PowerSensors::discover(&options.root) else {
        return Outcome::skip("no power sensors (see `power sensors`)");
    };
    let who = Identity::current();
    // As root everything opens: what matters is whether a user could, so ask the file's mode.
    let groups: &[u32] = if who.uid == 0 { &[] } else { &who.groups };
    let mut closed = Vec::new();
    for rail in &sensors.rails {
        for file in reading_files(&rail.reading) {
            match std::fs::metadata(file) {
                Ok(m) if readable_by(m.mode(), m.gid(), groups) => {}
                Ok(m) => closed.push(format!("{} (mode {:o})", file.display(), m.mode() & 0o777)),
                Err(e) => closed.push(format!("{}: {e}", file.display())),
            }
        }
    }
    if closed.is_empty() {
        return Outcome::pass(format!("{} rails readable without root", sensors.rails.len()));
    }
    let seen = format!("root only: {}", closed.join(", "));
    if facts.jetson {
        Outcome::fail(
            "power sensor files readable by users",
            seen,
            "a udev rule or chmod o+r on the sensor files, or measure power as root",
        )
    } else {
        Outcome::skip(format!(
            "{seen} (RAPL counters are root-only on kernels since 5.10: measure power as root)"
        ))
    }
}

/// Creates the folder if needed, then checks a file can be written in it as every output is
/// (`outfile::check_writable`: a probe written and removed).
fn writable(dir: &Path, variable: &str) -> Outcome {
    let tried = std::fs::create_dir_all(dir)
        .map_err(|e| e.to_string())
        .and_then(|_| crate::outfile::check_writable(&dir.join(".edgert-doctor")).map_err(|e| e.to_string()));
    match tried {
        Ok(()) => Outcome::pass(dir.display().to_string()),
        Err(e) => Outcome::fail(
            format!("{} writable", dir.display()),
            e.to_string(),
            format!("set {variable} to a folder this user can write"),
        ),
    }
}

/// The nearest folder of `path` that exists: the cache itself may not yet.
fn existing(path: &Path) -> PathBuf {
    path.ancestors().find(|p| p.exists()).unwrap_or(Path::new("/")).to_path_buf()
}

fn free_disk(cache: &Path) -> Outcome {
    let dir = existing(cache);
    let Ok(c) = CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return Outcome::fail(
            "a cache path without NUL bytes",
            dir.display().to_string(),
            "set EDGERT_ENGINE_CACHE",
        );
    };
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: statvfs reads a NUL-terminated path and fills the struct it is given.
    if unsafe { libc::statvfs(c.as_ptr(), &mut stat) } != 0 {
        let e = std::io::Error::last_os_error();
        return Outcome::fail(
            "the cache's file system readable",
            format!("{}: {e}", dir.display()),
            "check the mount",
        );
    }
    let free = stat.f_bavail as u64 * stat.f_frsize as u64;
    let gib = free as f64 / (1u64 << 30) as f64;
    if free >= MIN_FREE_BYTES {
        Outcome::pass(format!("{gib:.1} GiB free at {}", dir.display()))
    } else {
        Outcome::fail(
            format!("at least {} MiB free for engines and kernels", MIN_FREE_BYTES >> 20),
            format!("{gib:.2} GiB free at {}", dir.display()),
            "free disk space, or set EDGERT_ENGINE_CACHE to a larger disk",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_video_gid_comes_from_its_line() {
        let text = "root:x:0:\nvideo:x:44:ubuntu,nvidia\naudio:x:29:\n";
        assert_eq!(video_gid(text), Some(44));
        assert_eq!(video_gid("root:x:0:\n"), None);
        assert_eq!(video_gid("video:x:not-a-number:\n"), None);
        assert_eq!(video_gid(""), None);
    }

    #[test]
    fn a_user_outside_the_video_group_fails_with_the_command_that_fixes_it() {
        let user = Identity { uid: 1000, groups: vec![1000, 27] };
        match video_member(Some(44), &user, true) {
            Outcome::Fail { fix, .. } => assert!(fix.contains("usermod -aG video"), "{fix}"),
            other => panic!("{other:?}"),
        }
        let member = Identity { uid: 1000, groups: vec![1000, 44] };
        assert!(video_member(Some(44), &member, true).passed());
        let root = Identity { uid: 0, groups: vec![0] };
        assert!(video_member(Some(44), &root, true).passed());
        assert_eq!(video_member(None, &user, false).status(), "skip");
        assert_eq!(video_member(None, &user, true).status(), "fail");
    }

    #[test]
    fn readable_by_others_or_by_a_group_the_user_is_in() {
        assert!(readable_by(0o100444, 0, &[]));
        assert!(!readable_by(0o100400, 0, &[]));
        assert!(readable_by(0o100440, 44, &[44]));
        assert!(!readable_by(0o100440, 44, &[1000]));
    }

    #[test]
    fn a_cache_folder_that_cannot_be_made_fails_naming_the_variable() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, b"x").unwrap();
        // A folder inside a regular file cannot be made, even by root.
        match writable(&file.join("engines"), "EDGERT_ENGINE_CACHE") {
            Outcome::Fail { fix, .. } => assert!(fix.contains("EDGERT_ENGINE_CACHE"), "{fix}"),
            other => panic!("{other:?}"),
        }
        let made = dir.path().join("new/engines");
        assert!(writable(&made, "EDGERT_ENGINE_CACHE").passed());
        assert_eq!(std::fs::read_dir(&made).unwrap().count(), 0, "the probe is removed");
    }

    #[test]
    fn free_disk_reads_the_nearest_existing_folder() {
        let dir = tempfile::tempdir().unwrap();
        let outcome = free_disk(&dir.path().join("not/yet/made"));
        assert!(matches!(outcome, Outcome::Pass { .. } | Outcome::Fail { .. }), "{outcome:?}");
        let seen = match outcome {
            Outcome::Pass { seen } | Outcome::Fail { seen, .. } => seen,
            Outcome::Skip { .. } => unreachable!(),
        };
        assert!(seen.contains(&dir.path().display().to_string()), "{seen}");
    }
}
