"""Pretraining data: document sources, NSP / SOP / full-sentence pairing, (whole-word,
n-gram) masking, Google-schema TFRecords (`pipeline.create_pretraining_tfrecords`) and the
dynamic-masking tf.data pipeline (`pipeline.dynamic_pretraining_dataset`)."""
