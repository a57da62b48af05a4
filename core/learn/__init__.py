"""The guided lesson: the notes' steps as data, their toy numbers and the live model's."""
