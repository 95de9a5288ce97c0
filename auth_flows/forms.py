from __future__ import annotations

import unicodedata

from django import forms

MAX_CODE = 512  # generic cap; each provider validates its own code format on top


class CodeForm(forms.Form):
    code = forms.CharField(max_length=MAX_CODE, strip=True)

    def clean_code(self) -> str:
        code: str = self.cleaned_data["code"]
        # A code is one token: inner spaces, line breaks or control characters mean the paste
        # caught more than the code. The message never echoes it (a code is a credential).
        if any(ch.isspace() or unicodedata.category(ch).startswith("C") for ch in code):
            raise forms.ValidationError("Paste the code on its own, without spaces or line breaks.")
        return code
