from tritongate.runlog import RunLog, strip_ansi


def test_log_is_plain_text(tmp_path):
    with RunLog(tmp_path / "run.log") as log:
        log.write("\x1b[32mSUCCESS\x1b[0m row")
        log.write("BENCHMARK_DIRECT_NO_CUDAGRAPH phase=capture reason=x\n")
    assert (tmp_path / "run.log").read_text() == (
        "SUCCESS row\nBENCHMARK_DIRECT_NO_CUDAGRAPH phase=capture reason=x\n")
    assert strip_ansi("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "link"
