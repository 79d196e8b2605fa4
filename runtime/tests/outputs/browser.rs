//! The preview page in a real headless browser (Chromium's headless shell, or Chromium): the page
//! loads, its picture moves, two browsers at once both get frames, its frames/s figure agrees
//! with the report, and YOLO's boxes and a semantic model's class map reach the picture. Without a
//! Chromium on the PATH these print SKIPPED; `EDGERT_REQUIRE_BROWSER=1` (CI) makes that a failure.
//! `EDGERT_PREVIEW_SCREENSHOT=PATH` keeps the YOLO page's screenshot (the README's),
//! `EDGERT_SEGMENT_SCREENSHOT=PATH` the semantic one's (docs/models.md's).

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use super::common::{cpus_to_myself, emulated, image, model, or_skipped};
use super::{json_lines, previewing};
use edgert::annotate::palette::class_colour;

fn browser() -> Option<PathBuf> {
    // Under an emulator edgert runs too slowly for a live page's timing; natively it is tested.
    if emulated() {
        eprintln!("SKIPPED browser: edgert runs under an emulator");
        return None;
    }
    let paths = std::env::var_os("PATH").unwrap_or_default();
    let found = ["chromium-headless-shell", "chromium", "chromium-browser"]
        .iter()
        .flat_map(|name| std::env::split_paths(&paths).map(move |dir| dir.join(name)))
        .find(|p| p.is_file());
    or_skipped(
        found,
        "EDGERT_REQUIRE_BROWSER",
        "browser",
        "no chromium-headless-shell or chromium on the PATH",
    )
}

/// The browser on `url` with `what` (`--screenshot=…` or `--dump-dom`), its JavaScript given
/// `budget_ms` of time first; what it printed.
fn visit(browser: &Path, profile: &Path, url: &str, what: &str, budget_ms: u32) -> String {
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1100,760"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--virtual-time-budget={budget_ms}"))
        .args([what, url])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The picture's part of a screenshot: the page draws it at the top left, 16 px in.
fn picture(shot: &Path, width: u32, height: u32) -> image::RgbImage {
    let page = image::open(shot).unwrap().to_rgb8();
    image::imageops::crop_imm(&page, 16, 16, width, height).to_image()
}

fn finish(child: Child, mut errors: BufReader<std::process::ChildStderr>) -> serde_json::Value {
    let out = child.wait_with_output().unwrap();
    let mut rest = String::new();
    errors.read_to_string(&mut rest).unwrap();
    assert!(out.status.success(), "{rest}");
    json_lines(&String::from_utf8_lossy(&out.stdout)).last().unwrap()["summary"].clone()
}

#[test]
fn the_page_moves_serves_two_browsers_and_shows_the_reports_rate() {
    let _alone = cpus_to_myself();
    let Some(browser) = browser() else { return };
    let dir = tempfile::tempdir().unwrap();
    let digits = model("digits_mlp_nchw.toml").display().to_string();
    let (child, errors, url) = previewing(&[
        "run",
        "-m",
        &digits,
        "--source",
        "synthetic:320x240@30",
        "--duration-s",
        "7",
        "--json",
    ]);
    let shot = |k: usize| dir.path().join(format!("shot{k}.png"));
    // Two browsers at once, each with a profile of its own.
    std::thread::scope(|s| {
        for k in [0, 1] {
            let (browser, url, shot, profile) =
                (&browser, &url, shot(k), dir.path().join(format!("profile{k}")));
            s.spawn(move || visit(browser, &profile, url, &format!("--screenshot={}", shot.display()), 1500));
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(1500));
    visit(&browser, &dir.path().join("profile2"), &url, &format!("--screenshot={}", shot(2).display()), 1500);
    let dom = visit(&browser, &dir.path().join("profile3"), &url, "--dump-dom", 2000);
    let summary = finish(child, errors);

    let pictures: Vec<_> = (0..3).map(|k| picture(&shot(k), 320, 240)).collect();
    for (k, p) in pictures.iter().enumerate() {
        // The page's background is #111; a frame is bright somewhere.
        assert!(p.pixels().any(|px| px.0.iter().any(|&v| v > 100)), "browser {k} shows no picture");
    }
    let changed = pictures[0].pixels().zip(pictures[2].pixels()).filter(|(a, b)| a != b).count();
    assert!(changed > 1000, "the picture moved by {changed} pixels in 1.5 s");
    let fps_text = dom.split("<dd id=\"fps\">").nth(1).and_then(|rest| rest.split('<').next()).unwrap();
    let page_fps: f64 = fps_text.parse().unwrap_or_else(|_| panic!("fps on the page: {fps_text:?}"));
    let achieved = summary["achieved_fps"].as_f64().unwrap();
    assert!((page_fps - achieved).abs() <= 0.2 * achieved, "page {page_fps} vs report {achieved}");
}

/// The preview page of `model` running on bus.jpg, as the browser shows it; `keep` names the
/// variable that, set to a path, keeps the screenshot.
fn bus_page(browser: &Path, model: &Path, keep: &str) -> image::RgbImage {
    let dir = tempfile::tempdir().unwrap();
    let model = model.display().to_string();
    let source = format!("file:{}", image("bus.jpg").display());
    let args =
        ["run", "-m", &model, "--source", &source, "--loop", "--fps", "4", "--duration-s", "6", "--json"];
    let (child, errors, url) = previewing(&args);
    let shot = dir.path().join("page.png");
    visit(browser, &dir.path().join("profile"), &url, &format!("--screenshot={}", shot.display()), 4000);
    finish(child, errors);
    if let Ok(path) = std::env::var(keep) {
        std::fs::copy(&shot, path).unwrap();
    }
    image::open(&shot).unwrap().to_rgb8()
}

#[test]
fn yolos_boxes_reach_the_browser() {
    let _alone = cpus_to_myself();
    let Some(browser) = browser() else { return };
    let page = bus_page(&browser, &model("yolov3_tiny_coco_int8_qdq.toml"), "EDGERT_PREVIEW_SCREENSHOT");
    // bus.jpg is 810×1080, shown 728 px tall in a 760 px window: the bus's box is in its class colour.
    let bus = class_colour(5);
    let near = |px: &image::Rgb<u8>| px.0.iter().zip(bus).all(|(&a, b)| a.abs_diff(b) <= 40);
    let painted = page.pixels().filter(|px| near(px)).count();
    assert!(painted > 500, "{painted} pixels of the bus's box colour {bus:?}");
}

/// A semantic model's class map reaches the browser: the legend's bars, each in its class's
/// solid colour, are in the screenshot. `EDGERT_SEGMENT_SCREENSHOT=PATH` keeps it.
#[test]
fn a_class_map_reaches_the_browser() {
    let _alone = cpus_to_myself();
    let Some(browser) = browser() else { return };
    let page = bus_page(&browser, &model("detect/yolo26n_sem.onnx"), "EDGERT_SEGMENT_SCREENSHOT");
    // The untrained model's largest classes on bus.jpg (run --json): 5, 3, 4, 0.
    for class in [5, 3, 4, 0] {
        let colour = class_colour(class);
        let exact =
            page.pixels().filter(|px| px.0.iter().zip(colour).all(|(&a, b)| a.abs_diff(b) <= 8)).count();
        assert!(exact > 100, "{exact} pixels of class {class}'s legend colour {colour:?}");
    }
}
