"""families.deberta_v3: the DeBERTa-v2 config keys it does not compute are refused in one
line naming the key (the rest: tests/families/test_families.py's parity fixtures)."""

import pytest

from bert_keras.errors import InputError
from bert_keras.families import deberta_v3

V3 = dict(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
          intermediate_size=48, hidden_act="gelu", relative_attention=True, position_buckets=8,
          pos_att_type=["p2c", "c2p"], share_att_key=True, norm_rel_ebd="layer_norm",
          position_biased_input=False, type_vocab_size=0)


def test_a_v3_config_is_read():
    assert deberta_v3.encoder_config(V3, "ckpt")["disentangled_attention"] == "c2p|p2c"


@pytest.mark.parametrize("changes,key", [
    (dict(share_att_key=False), "share_att_key"),  # separate pos_key_proj / pos_query_proj
    (dict(share_att_key=None), "share_att_key"),  # transformers' default: False
    (dict(conv_kernel_size=3), "conv_kernel_size"),  # DeBERTa-v2-xlarge's convolution
])
def test_what_is_not_computed_is_refused_by_name(changes, key):
    config = {k: v for k, v in dict(V3, **changes).items() if v is not None}
    with pytest.raises(InputError, match=key) as error:
        deberta_v3.encoder_config(config, "ckpt")
    assert "\n" not in str(error.value)
