//! A bench report read back by `report`: merged, compared with itself, and plotted.
#![no_main]
use edgert::report::{compare, merge, plot, read::BenchFile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let (dir, path) = edgert_fuzz::in_file(bytes, "report.json");
    let Ok(file) = BenchFile::read(&path) else { return };
    let _ = merge::markdown(&merge::rows(std::slice::from_ref(&file)));
    let _ = compare::text(&compare::compare(&file, &file));
    let _ = plot::write_svg(std::slice::from_ref(&file), &dir.path().join("plot.svg"));
});
