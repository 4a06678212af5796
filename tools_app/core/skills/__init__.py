"""Skills as plain data: trigger matching, the skill file formats, and what a skill tool
does when it runs. Pure Python, no Django: `services/skills.py` stores and loads them."""
