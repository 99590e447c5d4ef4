"""The names every layer of the package shares (the TF Hub / Model Garden BERT interface).

tf.data elements, Keras inputs and SavedModel signatures all use these, from the data
pipelines (the lowest layer) up to the export.
"""

# The encoder's inputs, int32 [batch, seq]: token ids, padding mask (1 = real token),
# segment ids (0 = A, 1 = B).
INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")

# A token-level label that no loss or metric scores (padding, special tokens, non-first
# WordPieces of a word).
IGNORE_LABEL = -1
