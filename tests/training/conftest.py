"""Training tests collect their garbage before the next test starts.

A distributed dataset iterator that a training test leaves behind, collected later by
some other test's allocation, can make that test wait 20-60 s: TensorFlow's
~MultiDeviceIterator waits for its input pipeline's threads (seen under py-spy, with no CPU
used). Collected right after the test that made it, it goes in ~0.3 s.
"""

import gc

import pytest


@pytest.fixture(autouse=True)
def collect_garbage_after_the_test():
    yield
    gc.collect()
