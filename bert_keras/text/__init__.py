"""Text in the graph: the tokenizers behind one protocol (WordPiece, SentencePiece, byte-level
BPE; ids, byte offsets and words, see `tokenizers`), the packer of each family's segments
(`packing`), `BertPreprocessor`, vocabularies and vocabulary learning."""
