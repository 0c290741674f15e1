from vdgr_core.safety.personal import find_personal


def test_phone_numbers_and_emails_are_found_with_phonenumbers():
    text = "Call +1 650-253-0000, (650) 253-0001, +44 20 7946 0958 or 8 (495) 123-45-67; mail jane.doe@example.com."
    found = [(p.kind, text[p.start:p.end]) for p in find_personal(text)]
    assert found == [("phone", "+1 650-253-0000"), ("phone", "(650) 253-0001"), ("phone", "+44 20 7946 0958"),
                     ("phone", "8 (495) 123-45-67"), ("email", "jane.doe@example.com")]


def test_national_numbers_follow_the_regions_given():
    text = "Office: (650) 253-0001."
    assert find_personal(text, regions=("RU",)) == []
    assert [p.kind for p in find_personal(text, regions=("US",))] == ["phone"]


def test_dates_amounts_versions_part_numbers_are_not_personal_data():
    text = ("2026-11-29, 29.11.2026, 2026/11/29, 20261129, 4 100 000, 4,100,000.00, 1 250 000,00, 2.0.1, "
            "10.0.19045.3803, SM-G973F, SKU-90214-B, 0411-2345-678, 1234567890, 978-3-16-148410-0, "
            "192.168.8.1, 12:30:45, 123e4567-e89b-12d3-a456-426614174000")
    assert find_personal(text) == []
