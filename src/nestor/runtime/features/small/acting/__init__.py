"""Acting on a request: the answer, tour, fix, addition, rename and edit steps, with the model's prompts."""
