//! The preview's pacing: nothing drawn for nobody, at most 30 pictures a second for a faster
//! pipeline, every picture of a 30 fps camera, and the figures of every frame.

use std::time::{Duration, Instant};

use super::pace::Pace;
use super::{Preview, PICTURE_EVERY};
use crate::annotate::Overlay;
use crate::output::{Shown, Sink, Wants};

/// Pictures a pace lets through from frames at `times` (offsets from a start).
fn pictures(pace: &mut Pace, times: impl IntoIterator<Item = Duration>) -> usize {
    let start = Instant::now();
    let mut sent = 0;
    for at in times {
        if pace.due(start + at) {
            pace.sent(start + at);
            sent += 1;
        }
    }
    sent
}

fn frames(every: Duration, n: u32) -> impl Iterator<Item = Duration> {
    (0..n).map(move |i| every * i)
}

#[test]
fn a_faster_pipeline_gets_30_pictures_a_second() {
    for fps in [31, 41, 60, 75, 200, 1000] {
        // Ten seconds of frames: 300 pictures, one more for the grid's first point.
        let sent = pictures(&mut Pace::every(PICTURE_EVERY), frames(Duration::from_secs(1) / fps, fps * 10));
        assert!((295..=301).contains(&sent), "{fps} fps: {sent} pictures in 10 s");
    }
}

#[test]
fn a_30_fps_camera_loses_no_picture_to_jitter_and_a_slower_one_none_at_all() {
    // Frames up to 4 ms early or late, in a pattern that repeats every 7.
    let jitter = [0i64, 4, -4, 3, -2, 1, -3];
    let times = frames(PICTURE_EVERY, 300).enumerate().map(|(i, t)| {
        let j = jitter[i % jitter.len()];
        if j < 0 {
            t.saturating_sub(Duration::from_millis(-j as u64))
        } else {
            t + Duration::from_millis(j as u64)
        }
    });
    assert_eq!(pictures(&mut Pace::every(PICTURE_EVERY), times), 300);
    for fps in [5, 15, 25, 29] {
        let sent = pictures(&mut Pace::every(PICTURE_EVERY), frames(Duration::from_secs(1) / fps, fps * 10));
        assert_eq!(sent, (fps * 10) as usize, "{fps} fps");
    }
}

#[test]
fn after_a_stall_the_grid_starts_again_without_a_burst() {
    let mut pace = Pace::every(PICTURE_EVERY);
    let start = Instant::now();
    pace.sent(start);
    // Nothing for a second, then frames every millisecond: one picture now, the next ones on a
    // grid from now, a period apart (each up to a quarter period early).
    let after = start + Duration::from_secs(1);
    let due: Vec<u64> = (0..100u64)
        .filter(|&ms| {
            let now = after + Duration::from_millis(ms);
            let due = pace.due(now);
            if due {
                pace.sent(now);
            }
            due
        })
        .collect();
    assert_eq!(due, [0, 25, 59, 92], "milliseconds after the stall");
}

#[test]
fn pictures_only_for_viewers_and_figures_for_every_frame() {
    let sysfs = std::env::temp_dir();
    let mut preview = Preview::start("127.0.0.1:0", false, &sysfs).unwrap();
    let offer = |preview: &mut Preview, sequence: u64| {
        let wants = preview.wants();
        let jpeg = (wants == Wants::Jpeg).then_some(&[0xff, 0xd8, 0xff, 0xd9][..]);
        let overlay = Overlay { frame: sequence, ..Overlay::default() };
        let shown = Shown { sequence, canvas: None, jpeg, overlay: &overlay, dropped: 0, source_fps: None };
        preview.write(&shown).unwrap();
        assert_eq!(preview.hub.figures().overlay.frame, sequence, "every frame's figures");
        wants
    };
    assert_eq!(offer(&mut preview, 0), Wants::Figures, "nobody watches");
    let viewer = preview.hub.join().unwrap();
    assert_eq!(offer(&mut preview, 1), Wants::Jpeg);
    // The next frame straight after: not due yet, and the picture stays for the viewer.
    assert_eq!(offer(&mut preview, 2), Wants::Figures);
    assert!(preview.hub.snapshot().is_some());
    drop(viewer);
    std::thread::sleep(PICTURE_EVERY);
    // The viewer left, but the snapshot asks for pictures a while longer.
    assert_eq!(preview.wants(), Wants::Jpeg);
}
