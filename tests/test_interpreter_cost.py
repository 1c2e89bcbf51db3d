from tritongate.interpreter_cost import LAUNCHES_PER_ROW, launch_seconds, slow_rows
from tritongate.ops.builtin import REGISTRY
from tritongate.preflight import PlannedRow


def test_calibration_points_are_within_a_factor_of_two():
    # measured per launch on the CPU runner image (see the module docstring)
    measured = {("matmul", (512, 512, 512), "float16"): 1.18, ("softmax", (256, 4096), "float32"): 1.14,
                ("add", (1048576,), "float32"): 0.55, ("attention", (1, 4, 256, 64), "float16"): 0.34}
    for (op, shape, dtype), seconds in measured.items():
        spec = REGISTRY.get(op)
        size = 4 if dtype == "float32" else 2
        estimate = launch_seconds(spec.bytes(shape, size), spec.flops(shape) if spec.flops else None)
        assert seconds / 2 <= estimate <= seconds * 2, (op, estimate, seconds)


def test_only_rows_above_the_threshold_are_announced_slowest_first():
    planned = [PlannedRow("add", (4096,), "float32"), PlannedRow("matmul", (512, 512, 512), "float16"),
               PlannedRow("matmul", (1024, 1024, 1024), "float16")]
    slow = slow_rows(planned, REGISTRY, threshold_s=30)
    assert [(r.op, r.case) for r in slow] == [("matmul", "1024x1024x1024"), ("matmul", "512x512x512")]
    assert slow[0].row_s == slow[0].launch_s * LAUNCHES_PER_ROW
    assert "matmul 1024x1024x1024 float16 takes about" in slow[0].text() and "min for the row" in slow[0].text()


def test_a_cost_model_that_raises_loses_only_the_warning():
    class Spec:
        def bytes(self, shape, size):
            raise ZeroDivisionError

        flops = None

    class Registry:
        def get(self, name):
            return Spec()

    assert slow_rows([PlannedRow("mine", (8,), "float32")], Registry()) == []
