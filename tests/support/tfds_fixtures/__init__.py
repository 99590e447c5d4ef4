"""Real TFDS datasets for the tests, built from the bundled files (`builders`)."""
