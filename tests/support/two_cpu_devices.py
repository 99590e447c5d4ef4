"""`python tests/support/two_cpu_devices.py tools/X.py ARGS`: runs the tool as `python
tools/X.py ARGS` would, on two logical CPU devices (so `--distribution_strategy=mirrored` has
two replicas). A script file, not `python -c`, so that tool_runner forks it from its server:
TensorFlow is imported there but its devices are not configured yet.

Example:
    proc = tool_runner.run([sys.executable, TWO_CPU_DEVICES, "tools/pretrain.py", *flags],
                           capture_output=True, text=True)
"""

import os
import runpy
import sys


def main():
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    tool = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(tool))
    runpy.run_path(tool, run_name="__main__")


if __name__ == "__main__":  # not when pytest imports the module for its doctests
    main()
